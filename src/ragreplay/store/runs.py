"""Runs and their per-case results."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Row, Select, delete, func, select, text, update

from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Answer, Judgment, Rewrite, Verdict
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked, unique_by_prefix
from ragreplay.store.claim_queues import PARKED_UNTIL, run_queue
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import (
    cases,
    results,
    runs,
    status_config_record,
    status_config_row,
    to_json,
    work_claims,
)


class RunsRepository(StoreBase):
    """Creating runs, tracking their status and saving each case's result as it completes."""

    def create_run(self, run: RunRecord, case_ids: Sequence[str]) -> None:
        """Store a new run and a ``pending`` result row for each of ``case_ids``, in one transaction."""
        with self._write() as conn:
            self._create(conn, run, case_ids)

    def _create(self, conn: Connection, run: RunRecord, case_ids: Sequence[str]) -> None:
        now = datetime.now(UTC)
        if conn.execute(select(runs.c.id).where(runs.c.id == run.id)).first() is not None:
            raise StoreError(f"A run with id {run.id!r} already exists in the store at {self.url}.")
        conn.execute(runs.insert(), [status_config_row(run)])
        ids = list(dict.fromkeys(case_ids))
        pending = self._insert_ignore(results, ["run_id", "case_id"])  # the run is new: nothing to ignore
        status = ResultStatus.PENDING.value
        for start in range(0, len(ids), BATCH_SIZE):
            rows = [
                {"run_id": run.id, "case_id": cid, "status": status, "updated_at": now}
                for cid in ids[start : start + BATCH_SIZE]
            ]
            self._execute_rows(conn, pending, rows)

    def join_run(
        self, candidate: RunRecord, case_ids: Sequence[str], fresh: bool = False, run_id: str | None = None
    ) -> tuple[RunRecord, bool]:
        """The run several workers share, found or created under a lock on its configuration and dataset (so
        workers starting at once find the same run), and whether it existed: the run ``run_id`` names, else
        the newest run of ``candidate``'s hashes that did not fail (unless ``fresh``), else ``candidate``
        created with a pending result for each of ``case_ids``.

        A run found finished with every case done comes back as it is (``done``: nothing to replay). One found
        ``interrupted`` or ``done`` with cases left is set ``running`` again, and the cases parked by its last
        attempt (those that failed then: :meth:`~ragreplay.store.work_claims.WorkClaimsRepository.park`) are
        freed, to be tried again; one found ``running`` is joined as it is (other workers are at work on it)."""
        with self._write() as conn:
            hashes = (candidate.config_hash, candidate.dataset_hash)
            if run_id is not None:
                named = conn.execute(
                    select(runs.c.config_hash, runs.c.dataset_hash).where(runs.c.id == run_id)
                ).first()
                if named is None:
                    raise StoreError(
                        f"There is no run {run_id!r} in the store at {self.url}. Fix: pick an id from "
                        "`ragreplay runs`."
                    )
                hashes = (named.config_hash, named.dataset_hash)
            self._lock(conn, f"run:{hashes[0]}:{hashes[1]}")
            query = select(runs)
            if run_id is not None:
                query = query.where(runs.c.id == run_id)
            elif fresh:
                query = query.where(runs.c.id.is_(None))
            else:
                query = (
                    query.where(
                        runs.c.config_hash == candidate.config_hash,
                        runs.c.dataset_hash == candidate.dataset_hash,
                        runs.c.status != RunStatus.FAILED.value,
                    )
                    .order_by(runs.c.created_at.desc(), runs.c.id.desc())
                    .limit(1)
                )
            row = conn.execute(query).first()
            if row is None:
                self._create(conn, candidate, case_ids)
                return candidate, False
            found = status_config_record(RunRecord, row)
            if found.status == RunStatus.RUNNING:
                return found, True
            left = conn.execute(
                select(func.count())
                .select_from(results)
                .where(results.c.run_id == found.id, results.c.status != ResultStatus.DONE.value)
            ).scalar_one()
            if found.status == RunStatus.DONE and not left:
                return found, True
            conn.execute(
                update(runs)
                .where(runs.c.id == found.id)
                .values(status=RunStatus.RUNNING.value, finished_at=None)
            )
            conn.execute(
                delete(work_claims).where(
                    work_claims.c.queue == run_queue(found.id), work_claims.c.lease_until >= PARKED_UNTIL
                )
            )
            return found.model_copy(update={"status": RunStatus.RUNNING, "finished_at": None}), True

    def _lock(self, conn: Connection, key: str) -> None:
        """Hold a lock on ``key`` until ``conn``'s transaction ends: PostgreSQL's advisory lock; on SQLite the
        write transaction (``BEGIN IMMEDIATE``) serialises writers already."""
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})

    def end_shared_run(self, run_id: str, status: RunStatus) -> bool:
        """Mark a run several workers share ``done`` (unless it is already; its parked cases are then freed)
        or ``interrupted`` (only while it is ``running``), in one conditional statement; whether this call
        changed it: of workers finishing at once, one marks the run."""
        now = datetime.now(UTC)
        query = update(runs).where(runs.c.id == run_id)
        if status == RunStatus.DONE:
            query = query.where(runs.c.status != RunStatus.DONE.value).values(
                status=status.value, finished_at=now
            )
        else:
            query = query.where(runs.c.status == RunStatus.RUNNING.value).values(status=status.value)
        with self._write() as conn:
            changed = bool(conn.execute(query).rowcount)
            if changed and status == RunStatus.DONE:  # this attempt is over: its parked cases go with it
                conn.execute(
                    delete(work_claims).where(
                        work_claims.c.queue == run_queue(run_id), work_claims.c.lease_until >= PARKED_UNTIL
                    )
                )
            return changed

    def get_run(self, run_id_or_prefix: str) -> RunRecord | None:
        """The run with this id or unique id prefix; raises ``StoreError`` if the prefix is ambiguous."""
        with self._read() as conn:
            found = unique_by_prefix(conn, runs.c.id, run_id_or_prefix, "run")
            if found is None:
                return None
            return status_config_record(RunRecord, conn.execute(select(runs).where(runs.c.id == found)).one())

    def list_runs(self, limit: int | None = None) -> list[RunRecord]:
        """Runs, newest first, at most ``limit`` of them."""
        query = select(runs).order_by(runs.c.created_at.desc(), runs.c.id.desc()).limit(limit)
        with self._read() as conn:
            return [status_config_record(RunRecord, r) for r in conn.execute(query)]

    def find_latest_run(self, config_hash: str, dataset_hash: str) -> RunRecord | None:
        """The newest run of this configuration on this dataset that did not fail: to resume or re-show."""
        query = (
            select(runs)
            .where(runs.c.config_hash == config_hash, runs.c.dataset_hash == dataset_hash)
            .where(runs.c.status != RunStatus.FAILED.value)
            .order_by(runs.c.created_at.desc(), runs.c.id.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(query).first()
        return None if row is None else status_config_record(RunRecord, row)

    def set_run_status(self, run_id: str, status: RunStatus, finished_at: datetime | None = None) -> None:
        """Set a run's status and its ``finished_at`` (``None`` clears it, e.g. when a run resumes)."""
        with self._write() as conn:
            done = conn.execute(
                update(runs).where(runs.c.id == run_id).values(status=status.value, finished_at=finished_at)
            )
            if done.rowcount == 0:
                raise StoreError(
                    f"There is no run {run_id!r} in the store at {self.url}. Fix: check the run id."
                )

    def save_result(self, result: ResultRecord) -> None:
        """Insert or replace one case's result row (a single statement)."""
        with self._write() as conn:
            conn.execute(self._upsert(results, ["run_id", "case_id"]), [result_row(result)])

    def iter_results(self, run_id: str, only_started: bool = False) -> Iterator[ResultRecord]:
        """The results of :meth:`load_results`, in its order, read a page at a time, each page in its own
        short transaction (only the ids are read up front); ``only_started`` leaves out the pending rows."""
        order = self._results_query(run_id).with_only_columns(results.c.case_id)
        if only_started:
            order = order.where(results.c.status != ResultStatus.PENDING.value)
        with self._read() as conn:
            ids = list(conn.execute(order).scalars())
        for chunk in chunked(ids):
            query = select(results).where(results.c.run_id == run_id, results.c.case_id.in_(chunk))
            with self._read() as conn:
                page = {r.case_id: result_record(r) for r in conn.execute(query)}
            yield from (page[c] for c in chunk if c in page)

    def _results_query(self, run_id: str) -> Select[Any]:
        return (
            select(results)
            .select_from(results.outerjoin(cases, cases.c.id == results.c.case_id))
            .where(results.c.run_id == run_id)
            .order_by(
                cases.c.conversation_id.asc().nulls_last(),
                cases.c.turn_index.asc().nulls_last(),
                results.c.case_id,
            )
        )

    def load_results(self, run_id: str) -> list[ResultRecord]:
        """Every result of a run, ordered by case (conversation_id, turn_index); results whose case is not
        in the store come last, by case id."""
        with self._read() as conn:
            return [result_record(r) for r in conn.execute(self._results_query(run_id))]

    def last_activity(self, run_ids: Sequence[str]) -> dict[str, datetime]:
        """When each run last saved a case (or was created, if none yet): its heartbeat, to tell a run that is
        still going from one whose process was killed while it was ``running``."""
        if not run_ids:
            return {}
        query = (
            select(results.c.run_id, func.max(results.c.updated_at))
            .where(results.c.run_id.in_(list(run_ids)))
            .group_by(results.c.run_id)
        )
        with self._read() as conn:
            return {run_id: _aware(at) for run_id, at in conn.execute(query) if at is not None}

    def result_counts(self, run_id: str) -> dict[ResultStatus, int]:
        """How many of a run's results are in each status (statuses with none are left out)."""
        query = (
            select(results.c.status, func.count())
            .where(results.c.run_id == run_id)
            .group_by(results.c.status)
        )
        with self._read() as conn:
            return {ResultStatus(status): int(n) for status, n in conn.execute(query)}


def _aware(at: datetime) -> datetime:
    # an aggregate comes back without the column type's processing on some backends
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def result_record(row: Row[Any]) -> ResultRecord:
    """The result record of a ``results`` row."""
    return ResultRecord(
        run_id=row.run_id,
        case_id=row.case_id,
        status=ResultStatus(row.status),
        rewrite=None if row.rewrite is None else Rewrite.model_validate_json(row.rewrite),
        answer=None if row.answer is None else Answer.model_validate_json(row.answer),
        judgment=None if row.judgment is None else Judgment.model_validate_json(row.judgment),
        verdict=None if row.verdict is None else Verdict(row.verdict),
        error=row.error,
    )


def result_row(
    result: ResultRecord,
    now: datetime | None = None,
    encode: Callable[[BaseModel | None], str | None] = to_json,
) -> dict[str, object]:
    """The ``results`` row of a result record, saved at ``now`` (default: this moment); ``encode`` writes its
    rewrite, answer and judgment (as :func:`~ragreplay.store.schema.to_json` does)."""
    return {
        "run_id": result.run_id,
        "case_id": result.case_id,
        "status": result.status.value,
        "rewrite": encode(result.rewrite),
        "answer": encode(result.answer),
        "judgment": encode(result.judgment),
        "verdict": None if result.verdict is None else result.verdict.value,
        "error": result.error,
        "updated_at": datetime.now(UTC) if now is None else now,
    }
