"""What every part of the store shares: the engine, transactions, and dialect-specific upserts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from sqlalchemy import Connection, Dialect, Engine, Table, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeEngine

from ragreplay.core.storable import is_storable
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import StorableText

BATCH_SIZE = 1000


class StoreBase:
    """Holds the engine; subclasses add the tables' operations."""

    url: str
    _engine: Engine

    def __init__(self, engine: Engine, display_url: str) -> None:
        self._engine = engine
        self.url = display_url
        # Building an upsert costs more than running it on SQLite; statements are immutable: build each once.
        self._statements: dict[tuple[str, str, tuple[str, ...]], Any] = {}
        self._driver_plans: dict[tuple[int, tuple[str, ...]], _DriverPlan] = {}

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction that will write: committed on success, rolled back on any exception."""
        with self._engine.connect() as conn:
            conn.execution_options(store_write=True)
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A short read-only transaction."""
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def _insert(self, table: Table) -> Any:
        """An INSERT supporting ``on_conflict_do_nothing/update`` on this store's dialect."""
        if self._engine.dialect.name == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)

    def _insert_ignore(self, table: Table, keys: Sequence[str]) -> Any:
        """INSERT that keeps the existing row when ``keys`` already exist."""
        cache_key = ("ignore", table.name, tuple(keys))
        if cache_key not in self._statements:
            self._statements[cache_key] = self._insert(table).on_conflict_do_nothing(
                index_elements=list(keys)
            )
        return self._statements[cache_key]

    def _execute_rows(self, conn: Connection, statement: Any, rows: Sequence[dict[str, Any]]) -> int:
        """Execute ``statement`` (one of :meth:`_insert_ignore` / :meth:`_upsert`) once per row, all rows having
        the same keys.

        On SQLite the rows go straight to the driver's ``executemany`` (a cursor of the transaction's own
        connection: no SQLAlchemy execution context a statement, which cost more than a row's work when replies
        trickle in one at a time), each value bound as its column type binds it (so stored exactly as
        ``conn.execute`` would store it) without SQLAlchemy's per-row parameter handling, which cost more than
        SQLite's own work in the writer: bound a column at a time, and a text column's values checked for what
        cannot be stored in one scan of them all. Elsewhere: ``conn.execute``.

        Returns how many rows were inserted or changed on SQLite (a row an ``_insert_ignore`` kept is not
        counted), ``-1`` elsewhere.
        """
        if not rows:
            return 0
        dialect = self._engine.dialect
        if dialect.name != "sqlite":
            conn.execute(statement, list(rows))
            return -1
        keys = tuple(rows[0])
        plan = self._driver_plans.get((id(statement), keys))
        if plan is None:
            compiled = statement.compile(dialect=dialect, column_keys=list(keys))
            names = tuple(compiled.positiontup or ())
            binders = tuple(_column_binder(compiled.binds[name].type, dialect) for name in names)
            plan = _DriverPlan(statement, compiled.string, names, binders)
            self._driver_plans[id(statement), keys] = plan
        params = plan.bind(rows)
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.executemany(plan.sql, params)
            return int(cursor.rowcount)
        except Exception:
            # Failures are SQLAlchemy's to wrap and name (store/liveness): run the statement again through it,
            # which raises what ``exec_driver_sql`` would have (the rows done before the failure are redone
            # alike: an upsert or insert-ignore of the same rows in the same transaction).
            return int(conn.exec_driver_sql(plan.sql, params).rowcount)
        finally:
            cursor.close()

    def _upsert(self, table: Table, keys: Sequence[str]) -> Any:
        """INSERT that replaces every non-key column when ``keys`` already exist."""
        cache_key = ("upsert", table.name, tuple(keys))
        if cache_key not in self._statements:
            stmt = self._insert(table)
            update = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys}
            self._statements[cache_key] = stmt.on_conflict_do_update(index_elements=list(keys), set_=update)
        return self._statements[cache_key]


class _DriverPlan:
    """A compiled statement's SQL text and, per positional parameter, its row key and column binder."""

    __slots__ = ("binders", "names", "sql", "statement")

    def __init__(
        self,
        statement: Any,
        sql: str,
        names: tuple[str, ...],
        binders: tuple[Callable[[list[Any]], list[Any]] | None, ...],
    ) -> None:
        self.statement = statement  # held, so the id() it is cached under is never reused
        self.sql = sql
        self.names = names
        self.binders = binders

    def bind(self, rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
        """The rows as the driver's parameter tuples. Built column by column: one pass per column costs less
        than one per value."""
        columns = []
        for name, binder in zip(self.names, self.binders, strict=True):
            values = [row[name] for row in rows]
            columns.append(values if binder is None else binder(values))
        return list(zip(*columns, strict=True))


def _column_binder(column_type: TypeEngine[Any], dialect: Dialect) -> Callable[[list[Any]], list[Any]] | None:
    """What binds a column's values as ``column_type`` binds each on ``dialect`` (``None``: as they are).

    The processor of the type's implementation *for this dialect* (SQLite's DATETIME writes its own text,
    microseconds always); the generic type's would leave that to the driver, which writes it differently.
    """
    impl = column_type.dialect_impl(dialect)
    process = impl.bind_processor(dialect)
    if process is None:
        return None
    if isinstance(impl, StorableText) and impl.impl_instance.bind_processor(dialect) is None:
        return _storable_column(process)
    return partial(_processed_column, process)


def _storable_column(process: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    """A :class:`StorableText` column's binder: its values as they are when, joined, they hold nothing to
    replace (nearly always: one scan in C instead of a type processor's call per value), else each
    processed."""

    def bind(values: list[Any]) -> list[Any]:
        try:
            joined = "".join(filter(None, values))
        except TypeError:  # not all text: as the type binds each
            return [process(value) for value in values]
        if is_storable(joined):
            return values
        return [process(value) for value in values]

    return bind


def _processed_column(process: Callable[[Any], Any], values: list[Any]) -> list[Any]:
    """``values`` each through ``process``; a value the same object as the one before it (a batch's one
    timestamp) is processed once."""
    out = []
    last: object = _UNSEEN
    done: Any = None
    for value in values:
        if value is not last:
            done = process(value)
            last = value
        out.append(done)
    return out


_UNSEEN = object()


def unique_by_prefix(conn: Connection, id_column: ColumnElement[str], prefix: str, what: str) -> str | None:
    """The one id equal to or starting with ``prefix``; ``None`` if none, :class:`StoreError` if several."""
    if not prefix:
        return None
    exact = conn.execute(select(id_column).where(id_column == prefix)).scalar_one_or_none()
    if exact is not None:
        return exact
    found = list(
        conn.execute(
            select(id_column).where(id_column.startswith(prefix, autoescape=True)).limit(6)
        ).scalars()
    )
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise StoreError(
            f"The {what} id prefix {prefix!r} is ambiguous: it matches {shown}. Fix: type more characters."
        )
    return found[0] if found else None


def chunked(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    """``items`` in slices of at most ``size`` (keeps IN lists within every backend's limits)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
