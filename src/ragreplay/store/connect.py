"""Turning what the user typed (a path or a URL) into a configured SQLAlchemy engine."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DataError, IntegrityError, OperationalError, StatementError
from sqlalchemy.pool import StaticPool

from ragreplay.errors import import_extra
from ragreplay.store.failures import StoreError, StoreUnavailable
from ragreplay.store.liveness import StoreTimeouts, name_store_failures, postgres_connect_args

__all__ = ["StoreError", "StoreUnavailable", "connection_failure", "create_store_engine", "parse_store_url"]

BUSY_TIMEOUT_MS = 30_000
SUPPORTED = "a file path, sqlite:///path/to/store.db or postgresql://user:password@host:5432/dbname"


def parse_store_url(url_or_path: str) -> tuple[URL, str]:
    """Return the SQLAlchemy URL to connect with and the URL to show the user (password masked).

    A plain path means a SQLite file; ``postgresql://`` and ``postgres://`` use the psycopg 3 driver.
    """
    text = url_or_path.strip()
    if not text:
        raise StoreError(f"The store location is empty. Fix: give {SUPPORTED}.")
    if "://" not in text:
        if text == ":memory:":
            return make_url("sqlite://"), "sqlite://"
        path = Path(text).expanduser().resolve()
        url = URL.create("sqlite", database=str(path))
        return url, url.render_as_string(hide_password=True)
    try:
        shown = make_url(text)
    except ArgumentError as exc:
        masked = _mask_unparseable(text)
        raise StoreError(f"Cannot parse the store URL {masked!r}: {exc}. Fix: give {SUPPORTED}.") from None
    display = shown.render_as_string(hide_password=True)
    backend, _, driver = shown.drivername.partition("+")
    if backend == "sqlite":
        if driver and driver != "pysqlite":
            raise StoreError(f"Unsupported SQLite driver in store URL {display!r}. Fix: use sqlite:///path.")
        if shown.database and shown.database != ":memory:":
            path = Path(shown.database).expanduser().resolve()
            return shown.set(drivername="sqlite", database=str(path)), display
        return shown.set(drivername="sqlite", database=None), display
    if backend in ("postgresql", "postgres"):
        if driver and driver != "psycopg":
            raise StoreError(
                f"Unsupported PostgreSQL driver {driver!r} in store URL {display!r}. "
                "Fix: write postgresql://... (ragreplay uses psycopg 3)."
            )
        return shown.set(drivername="postgresql+psycopg"), display
    raise StoreError(
        f"Unsupported store URL {display!r}: only SQLite and PostgreSQL are supported. Fix: give {SUPPORTED}."
    )


def _mask_unparseable(text: str) -> str:
    """Hide anything between ``//user:`` and ``@`` in a URL SQLAlchemy could not parse."""
    scheme, sep, rest = text.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return text
    user = creds.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"


def create_store_engine(url: URL, timeouts: StoreTimeouts | None = None) -> Engine:
    """An engine for ``url`` with the connection settings the store relies on; a store that stops answering
    raises :class:`StoreUnavailable` (``timeouts``: from the environment by default, see ``store.liveness``)."""
    if url.get_backend_name() == "sqlite":
        engine = _sqlite_engine(url)
        name_store_failures(engine, url.render_as_string(), StoreTimeouts(), BUSY_TIMEOUT_MS / 1000)
        return engine
    import_extra("psycopg", "A PostgreSQL store")  # the [postgres] extra: one line naming it when missing
    from ragreplay.store.pg_deadline import use_deadline

    args, in_force = postgres_connect_args(url, timeouts or StoreTimeouts.from_env())
    engine = create_engine(url, pool_pre_ping=True, connect_args=args)
    use_deadline(engine, in_force.answer_deadline_s())
    display = url.set(drivername="postgresql").render_as_string(hide_password=True)
    name_store_failures(engine, display, in_force, BUSY_TIMEOUT_MS / 1000)
    return engine


def _sqlite_engine(url: URL) -> Engine:
    in_memory = not url.database
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}}
    if in_memory:
        # Every new connection to ":memory:" is a new, empty database: share one.
        kwargs["poolclass"] = StaticPool
    else:
        Path(str(url.database)).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Take transaction control away from pysqlite so that BEGIN is ours (see _on_begin) and DDL in a
        # migration is rolled back with the rest of it.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            if not in_memory:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A writer takes the write lock up front: a deferred transaction that later upgrades can fail with
        # SQLITE_BUSY at once instead of waiting busy_timeout.
        immediate = conn.get_execution_options().get("store_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def connection_failure(display_url: str, exc: BaseException) -> StoreError:
    """A user-facing error for a store that could not be reached or read."""
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    reason = detail[0] if detail else type(exc).__name__
    if display_url.startswith("sqlite"):
        fix = "check that the path is a ragreplay store (an SQLite file) and that you may read and write it"
    elif isinstance(exc, OperationalError):
        fix = (
            "check that the PostgreSQL server is running and reachable, and that the URL's host, port, "
            "user, password and database name are right"
        )
    else:
        fix = "check that the database (and any schema the URL names) exists and you may create tables in it"
    return StoreError(f"Cannot open the store at {display_url}: {reason}. Fix: {fix}.")


def is_row_error(exc: BaseException) -> bool:
    """Did the store refuse what is in a row (bad text, a value out of range), rather than fail itself
    (down, timed out)? Only then is retrying row by row worth it."""
    if isinstance(exc, UnicodeError | ValueError | TypeError):
        return True
    return isinstance(exc, DataError | IntegrityError) or (
        isinstance(exc, StatementError) and isinstance(exc.orig, UnicodeError | ValueError | TypeError)
    )
