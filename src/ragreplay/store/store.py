"""The :class:`Store`: one object for everything ragreplay keeps, on SQLite or PostgreSQL."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ragreplay.core.types import Rewrite
from ragreplay.store.base import StoreBase
from ragreplay.store.batch import BatchWriter, WriteBatch
from ragreplay.store.cache import CacheRepository
from ragreplay.store.calibration_history import CalibrationHistoryRepository
from ragreplay.store.cases import CasesRepository
from ragreplay.store.comparisons import ComparisonsRepository
from ragreplay.store.connect import StoreError, connection_failure, create_store_engine, parse_store_url
from ragreplay.store.evals import EvalsRepository
from ragreplay.store.gates import GatesRepository
from ragreplay.store.golden import GoldenSetsRepository
from ragreplay.store.migrations import check_not_newer, current_version, latest_version, migrate
from ragreplay.store.regsets import RegsetsRepository
from ragreplay.store.review_judgments import ReviewJudgmentsRepository
from ragreplay.store.review_sessions import ReviewSessionsRepository
from ragreplay.store.reviews import ReviewsRepository
from ragreplay.store.rewrites import RewritesRepository
from ragreplay.store.runs import RunsRepository
from ragreplay.store.secrets import SecretsRepository
from ragreplay.store.shadow import ShadowRowsRepository
from ragreplay.store.shadow_browse import ShadowBrowseRepository
from ragreplay.store.shadow_feedback import ShadowFeedbackRepository
from ragreplay.store.shadow_judgments import ShadowJudgmentsRepository
from ragreplay.store.shadow_purge import ShadowPurgeRepository
from ragreplay.store.shadow_rollups import ShadowRollupsRepository
from ragreplay.store.shadow_window import ShadowWindowRepository
from ragreplay.store.work_claims import WorkClaimsRepository


class Store(StoreBase):
    """Everything ragreplay keeps, one small repository per feature, over one engine.

    ``cases`` (ingested sources, conversations, cases, skips), ``rewrites`` (the question pinned to each case),
    ``runs`` (replay runs and results), ``cache`` (model responses), ``comparisons``, the shadow log
    (``shadow_rows``, ``shadow_judgments``, ``shadow_feedback``, ``shadow_browse`` for the dashboard's reads,
    ``shadow_purge`` for retention, ``shadow_rollups`` for the figures per hour, ``shadow_window`` for the
    regression set's streamed window), ``regsets`` (regression set versions, their items and overrides) and
    ``gates`` (promotion gates and their items), ``reviews`` (reviewers, review queues, reservations,
    reviews), ``review_sessions`` (the review screen's logins), ``review_judgments`` (judgments of review items
    by judge version), ``calibration_history`` (each judge version's agreement with reviewers over time),
    ``evals`` (`ragreplay eval` runs and their rows' scores), ``golden`` (golden set versions and their rows),
    ``secrets`` (e.g. the shadow's user-id salt) and ``work_claims`` (items claimed by the workers sharing a
    job, and their shared rate buckets).
    Each service takes the repository (or the protocol in ``ragreplay.ports``) it needs. Every method is
    synchronous and commits its own transaction; :meth:`write_batch` writes across repositories in one. A store
    may be used from one thread other than the one that opened it (the jobs' writer thread).
    """

    def __init__(self, engine: Engine, display_url: str) -> None:
        super().__init__(engine, display_url)
        self.cases = CasesRepository(engine, display_url)
        self.rewrites = RewritesRepository(engine, display_url)
        self.runs = RunsRepository(engine, display_url)
        self.cache = CacheRepository(engine, display_url)
        self.comparisons = ComparisonsRepository(engine, display_url)
        self.shadow_window = ShadowWindowRepository(engine, display_url)
        self.shadow_rows = ShadowRowsRepository(engine, display_url)
        self.shadow_judgments = ShadowJudgmentsRepository(engine, display_url)
        self.shadow_feedback = ShadowFeedbackRepository(engine, display_url)
        self.shadow_browse = ShadowBrowseRepository(engine, display_url)
        self.shadow_purge = ShadowPurgeRepository(engine, display_url)
        self.shadow_rollups = ShadowRollupsRepository(engine, display_url)
        self.gates = GatesRepository(engine, display_url)
        self.secrets = SecretsRepository(engine, display_url)
        self.regsets = RegsetsRepository(engine, display_url)
        self.reviews = ReviewsRepository(engine, display_url)
        self.review_sessions = ReviewSessionsRepository(engine, display_url)
        self.review_judgments = ReviewJudgmentsRepository(engine, display_url)
        self.calibration_history = CalibrationHistoryRepository(engine, display_url)
        self.evals = EvalsRepository(engine, display_url)
        self.golden = GoldenSetsRepository(engine, display_url)
        self.work_claims = WorkClaimsRepository(engine, display_url)
        self._batch = BatchWriter(
            engine,
            display_url,
            self.comparisons,
            self.shadow_judgments,
            self.gates,
            self.review_judgments,
            self.evals,
        )

    def write_batch(self, batch: WriteBatch) -> dict[tuple[str, str], Rewrite]:
        """Apply ``batch`` (results, pins, cache entries, comparison rows, shadow judgments) in one
        transaction; returns the rewrite pinned to each case of ``batch.pins``."""
        return self._batch.write_batch(batch)

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
