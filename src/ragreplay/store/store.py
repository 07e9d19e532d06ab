"""The :class:`Store`: one object for everything ragreplay keeps, on SQLite or PostgreSQL."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.exc import DBAPIError

from ragreplay.store.base import StoreBase
from ragreplay.store.batch import BatchMixin
from ragreplay.store.cache import CacheMixin
from ragreplay.store.comparisons import ComparisonsMixin
from ragreplay.store.connect import StoreError, connection_failure, create_store_engine, parse_store_url
from ragreplay.store.migrations import check_not_newer, current_version, latest_version, migrate
from ragreplay.store.runs import RunsMixin
from ragreplay.store.shadow import ShadowMixin
from ragreplay.store.shadow_browse import ShadowBrowseMixin
from ragreplay.store.shadow_feedback import ShadowFeedbackMixin
from ragreplay.store.shadow_judgments import ShadowJudgmentsMixin
from ragreplay.store.shadow_purge import ShadowPurgeMixin
from ragreplay.store.sources import SourcesMixin


class Store(
    BatchMixin,
    SourcesMixin,
    RunsMixin,
    ComparisonsMixin,
    ShadowMixin,
    ShadowJudgmentsMixin,
    ShadowFeedbackMixin,
    ShadowPurgeMixin,
    ShadowBrowseMixin,
    CacheMixin,
    StoreBase,
):
    """Sources, cases, pinned rewrites, runs, results, comparisons, shadow rows, live feedback and the model-call cache.

    Every method is synchronous and commits its own transaction. A store may be used from one thread other
    than the one that opened it (the async engine's writer thread).
    """

    @classmethod
    def open(cls, url: str) -> Store:
        """Open the store at ``url`` (a file path, ``sqlite:///...`` or ``postgresql://...``), creating it
        and bringing its schema up to date as needed.

        Raises :class:`StoreError` naming the URL (password masked) for a bad URL, an unreachable server,
        a file that is not a store, or a store written by a newer ragreplay.
        """
        engine_url, display = parse_store_url(url)
        try:
            engine = create_store_engine(engine_url)
        except OSError as exc:
            raise connection_failure(display, exc) from exc
        try:
            with engine.connect() as conn, conn.begin():
                version = current_version(conn)
            check_not_newer(version, display)
            if version < latest_version():
                with engine.connect() as conn:
                    conn.execution_options(store_write=True)
                    with conn.begin():
                        migrate(conn, display)
        except StoreError:
            engine.dispose()
            raise
        except DBAPIError as exc:
            engine.dispose()
            raise connection_failure(display, exc) from exc
        return cls(engine, display)

    def schema_version(self) -> int:
        """The schema version the store is at."""
        with self._read() as conn:
            return current_version(conn)

    def close(self) -> None:
        """Close every pooled connection. The store must not be used afterwards."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"
