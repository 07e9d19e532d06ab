"""What every part of the store shares: the engine, transactions, and dialect-specific upserts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, Table, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from ragreplay.store.connect import StoreError

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

    def _execute_rows(self, conn: Connection, statement: Any, rows: Sequence[dict[str, Any]]) -> None:
        """Execute ``statement`` (one of :meth:`_insert_ignore` / :meth:`_upsert`) once per row, all rows having
        the same keys.

        On SQLite the rows go straight to the driver's ``executemany``, each value bound by its column type's
        own processor (so stored exactly as ``conn.execute`` would store it) without SQLAlchemy's per-row
        parameter handling, which cost more than SQLite's own work in the writer. Elsewhere: ``conn.execute``.
        """
        if not rows:
            return
        dialect = self._engine.dialect
        if dialect.name != "sqlite":
            conn.execute(statement, list(rows))
            return
        keys = tuple(rows[0])
        plan = self._driver_plans.get((id(statement), keys))
        if plan is None:
            compiled = statement.compile(dialect=dialect, column_keys=list(keys))
            names = tuple(compiled.positiontup or ())
            processors = tuple(compiled.binds[name].type.bind_processor(dialect) for name in names)
            plan = _DriverPlan(statement, compiled.string, names, processors)
            self._driver_plans[id(statement), keys] = plan
        conn.exec_driver_sql(plan.sql, plan.bind(rows))

    def _upsert(self, table: Table, keys: Sequence[str]) -> Any:
        """INSERT that replaces every non-key column when ``keys`` already exist."""
        cache_key = ("upsert", table.name, tuple(keys))
        if cache_key not in self._statements:
            stmt = self._insert(table)
            update = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys}
            self._statements[cache_key] = stmt.on_conflict_do_update(index_elements=list(keys), set_=update)
        return self._statements[cache_key]


class _DriverPlan:
    """A compiled statement's SQL text and, per positional parameter, its row key and bind processor."""

    __slots__ = ("names", "processors", "sql", "statement")

    def __init__(
        self,
        statement: Any,
        sql: str,
        names: tuple[str, ...],
        processors: tuple[Callable[[Any], Any] | None, ...],
    ) -> None:
        self.statement = statement  # held, so the id() it is cached under is never reused
        self.sql = sql
        self.names = names
        self.processors = processors

    def bind(self, rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
        """The rows as the driver's parameter tuples; a value the same object as the row before's (a batch's
        one timestamp) is processed once. Built column by column: one pass per column costs less than one
        per value."""
        columns = [
            _column(rows, name, process) for name, process in zip(self.names, self.processors, strict=True)
        ]
        return list(zip(*columns, strict=True))


def _column(rows: Sequence[dict[str, Any]], name: str, process: Callable[[Any], Any] | None) -> list[Any]:
    """Column ``name`` of ``rows``, each value through ``process`` (if any; a repeated object processed once)."""
    values = [row[name] for row in rows]
    if process is None:
        return values
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
