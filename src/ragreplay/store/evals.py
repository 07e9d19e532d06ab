"""`ragreplay eval` runs and their rows' scores, saved as each row is scored; the rows' payloads are the eval
layer's JSON (metric values, undetermined reasons, the judge's counts), kept opaque by the store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Row, delete, func, select, text, update

from ragreplay.core.runs import RunStatus
from ragreplay.store.base import BATCH_SIZE, StoreBase, unique_by_prefix
from ragreplay.store.claim_queues import PARKED_UNTIL, eval_queue
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import dumps, eval_rows, eval_runs, work_claims

_UNFINISHED = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)


class EvalRunRecord(BaseModel):
    """One eval run: the dataset, the judge and its prompt version, the options (``config``), how far it got
    and, once finished, its ``summary``."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_at: datetime
    status: RunStatus
    dataset: str
    judge: str
    prompt_version: str
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: str
    n_rows: int
    summary: dict[str, Any] | None = None
    finished_at: datetime | None = None


class EvalRowRecord(BaseModel):
    """One scored row of an eval run: its dataset position, whether it errored, and the eval layer's JSON."""

    model_config = ConfigDict(frozen=True)

    eval_id: str
    row_id: str
    position: int
    error: bool = False
    payload: dict[str, Any]


def row_record(row: Any) -> EvalRowRecord:
    """An ``eval_rows`` row as an :class:`EvalRowRecord`."""
    return EvalRowRecord(
        eval_id=row.eval_id,
        row_id=row.row_id,
        position=row.position,
        error=bool(row.error),
        payload=json.loads(row.payload),
    )


def _record(row: Row[Any]) -> EvalRunRecord:
    data = row._asdict()
    data["config"] = json.loads(data["config"])
    data["summary"] = json.loads(data["summary"]) if data["summary"] is not None else None
    return EvalRunRecord.model_validate(data)


class EvalsRepository(StoreBase):
    """Creating eval runs, finding the one to resume, saving rows' scores and reading them back."""

    def create_eval(self, record: EvalRunRecord) -> None:
        """Store a new eval run; :class:`StoreError` if its id is taken."""
        with self._write() as conn:
            self._create(conn, record)

    def _create(self, conn: Connection, record: EvalRunRecord) -> None:
        row = record.model_dump(mode="python")
        row["status"] = record.status.value
        row["config"] = dumps(record.model_dump(mode="json")["config"])
        row["summary"] = None if record.summary is None else dumps(record.summary)
        if conn.execute(select(eval_runs.c.id).where(eval_runs.c.id == record.id)).first():
            raise StoreError(f"An eval run with id {record.id!r} already exists in the store at {self.url}.")
        conn.execute(eval_runs.insert(), [row])

    def join_eval(
        self,
        candidate: EvalRunRecord,
        pending: Sequence[EvalRowRecord],
        fresh: bool = False,
        eval_id: str | None = None,
    ) -> tuple[EvalRunRecord, bool]:
        """The eval run several workers share, found or created under a lock on its configuration hash (so
        workers starting at once find the same run), and whether it existed: the run ``eval_id`` names, else
        the newest run of ``candidate``'s hash (unless ``fresh``), else ``candidate`` created.

        ``pending`` holds a placeholder row (``error`` set) for every row of the dataset: those the run lacks
        are inserted, so the rows still to score are in the store for the workers to claim
        (:meth:`~ragreplay.store.work_claims.WorkClaimsRepository.claim_eval_rows`). A run found ``done`` with no
        errored row comes back as it is (nothing to score); one found ``interrupted``, or ``done`` with errored
        rows, is set ``running`` again and the rows parked by its last attempt are freed to be tried again; one
        found ``running`` is joined as it is (other workers are at work on it). A run named by ``eval_id`` whose
        hash is not ``candidate``'s comes back unchanged (the caller refuses to join it)."""
        with self._write() as conn:
            digest: str | None = candidate.config_hash
            if eval_id is not None:
                digest = conn.execute(
                    select(eval_runs.c.config_hash).where(eval_runs.c.id == eval_id)
                ).scalar_one_or_none()
                if digest is None:
                    raise StoreError(
                        f"There is no eval run {eval_id!r} in the store at {self.url}. Fix: pick an id from "
                        "`ragreplay evals`."
                    )
            if conn.dialect.name == "postgresql":  # SQLite's write transaction serialises writers already
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"eval:{digest}"})
            query = select(eval_runs)
            if eval_id is not None:
                query = query.where(eval_runs.c.id == eval_id)
            elif fresh:
                query = query.where(eval_runs.c.id.is_(None))
            else:
                query = (
                    query.where(eval_runs.c.config_hash == digest)
                    .order_by(eval_runs.c.created_at.desc(), eval_runs.c.id.desc())
                    .limit(1)
                )
            row = conn.execute(query).first()
            if row is None:
                self._create(conn, candidate)
                self._add_pending(conn, candidate.id, pending)
                return candidate, False
            found = _record(row)
            if found.config_hash != candidate.config_hash:  # another dataset or options: the caller refuses
                return found, True
            stored = conn.execute(
                select(func.count()).select_from(eval_rows).where(eval_rows.c.eval_id == found.id)
            ).scalar_one()
            if stored < len(pending):
                self._add_pending(conn, found.id, pending)
            if found.status == RunStatus.RUNNING:
                return found, True
            errored = conn.execute(
                select(func.count())
                .select_from(eval_rows)
                .where(eval_rows.c.eval_id == found.id, eval_rows.c.error.is_(True))
            ).scalar_one()
            if found.status == RunStatus.DONE and not errored:
                return found, True
            conn.execute(
                update(eval_runs)
                .where(eval_runs.c.id == found.id)
                .values(status=RunStatus.RUNNING.value, finished_at=None)
            )
            self._free_parked(conn, found.id)
            return found.model_copy(update={"status": RunStatus.RUNNING, "finished_at": None}), True

    def _add_pending(self, conn: Connection, eval_id: str, pending: Sequence[EvalRowRecord]) -> None:
        now = datetime.now(UTC)
        values = [
            {
                "eval_id": eval_id,
                "row_id": r.row_id,
                "position": r.position,
                "error": True,
                "payload": dumps(r.payload),
                "updated_at": now,
            }
            for r in pending
        ]
        stmt = self._insert_ignore(eval_rows, ["eval_id", "row_id"])
        for start in range(0, len(values), BATCH_SIZE):
            self._execute_rows(conn, stmt, values[start : start + BATCH_SIZE])

    def _free_parked(self, conn: Connection, eval_id: str) -> None:
        conn.execute(
            delete(work_claims).where(
                work_claims.c.queue == eval_queue(eval_id), work_claims.c.lease_until >= PARKED_UNTIL
            )
        )

    def end_shared_eval(self, eval_id: str, status: RunStatus, summary: dict[str, Any] | None = None) -> bool:
        """Mark an eval run several workers share ``done`` with ``summary`` (unless it is done already; the
        rows parked by this attempt are then freed) or ``interrupted`` (only while it is ``running``), in one
        conditional statement; whether this call changed it: of workers finishing at once, one marks the run."""
        query = update(eval_runs).where(eval_runs.c.id == eval_id)
        if status == RunStatus.DONE:
            query = query.where(eval_runs.c.status != RunStatus.DONE.value).values(
                status=status.value,
                summary=None if summary is None else dumps(summary),
                finished_at=datetime.now(UTC),
            )
        else:
            query = query.where(eval_runs.c.status == RunStatus.RUNNING.value).values(status=status.value)
        with self._write() as conn:
            changed = bool(conn.execute(query).rowcount)
            if changed and status == RunStatus.DONE:
                self._free_parked(conn, eval_id)
            return changed

    def unscored(self, eval_id: str) -> int:
        """How many rows of an eval run are not scored (placeholders, interrupted or errored rows)."""
        query = (
            select(func.count())
            .select_from(eval_rows)
            .where(eval_rows.c.eval_id == eval_id, eval_rows.c.error.is_(True))
        )
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def get_eval(self, id_or_prefix: str) -> EvalRunRecord | None:
        """The eval run with this id or unique id prefix; ``StoreError`` if the prefix is ambiguous."""
        with self._read() as conn:
            found = unique_by_prefix(conn, eval_runs.c.id, id_or_prefix, "eval run")
            if found is None:
                return None
            return _record(conn.execute(select(eval_runs).where(eval_runs.c.id == found)).one())

    def find_eval(self, config_hash: str, unfinished_only: bool = False) -> EvalRunRecord | None:
        """The newest eval run of this configuration (only ``running`` / ``interrupted`` ones if asked)."""
        query = select(eval_runs).where(eval_runs.c.config_hash == config_hash)
        if unfinished_only:
            query = query.where(eval_runs.c.status.in_(_UNFINISHED))
        query = query.order_by(eval_runs.c.created_at.desc(), eval_runs.c.id.desc()).limit(1)
        with self._read() as conn:
            row = conn.execute(query).first()
        return None if row is None else _record(row)

    def list_evals(self, limit: int | None = None) -> list[EvalRunRecord]:
        """Eval runs, newest first."""
        query = select(eval_runs).order_by(eval_runs.c.created_at.desc(), eval_runs.c.id.desc()).limit(limit)
        with self._read() as conn:
            return [_record(r) for r in conn.execute(query)]

    def set_eval_status(self, eval_id: str, status: RunStatus) -> None:
        """Move an eval run to ``status`` (running again clears its finish time)."""
        values: dict[str, Any] = {"status": status.value}
        if status == RunStatus.RUNNING:
            values.update(finished_at=None)
        self._update(eval_id, values)

    def finish_eval(self, eval_id: str, summary: dict[str, Any]) -> None:
        """Mark an eval run done with the summary to re-render it from."""
        self._update(
            eval_id,
            {"status": RunStatus.DONE.value, "summary": dumps(summary), "finished_at": datetime.now(UTC)},
        )

    def _update(self, eval_id: str, values: dict[str, Any]) -> None:
        with self._write() as conn:
            done = conn.execute(update(eval_runs).where(eval_runs.c.id == eval_id).values(**values))
            if done.rowcount == 0:
                raise StoreError(
                    f"There is no eval run {eval_id!r} in the store at {self.url}. "
                    "Fix: pick an id from `ragreplay evals`."
                )

    def save_eval_rows(self, rows: Sequence[EvalRowRecord]) -> None:
        """Insert rows' scores, keyed by (eval run, row id), in one transaction (see :meth:`put_eval_rows`)."""
        with self._write() as conn:
            self.put_eval_rows(conn, rows)

    def put_eval_rows(self, conn: Connection, rows: Sequence[EvalRowRecord]) -> None:
        """Insert rows' scores inside the caller's transaction ``conn``. First wins: a row stored without an
        error (scored) is never replaced; one stored with an error (errored, answered but not judged yet, or a
        placeholder) is. So a row two workers scored (the first one's lease ran out while it was at work) keeps
        the scores saved first."""
        now = datetime.now(UTC)
        unique = {
            (r.eval_id, r.row_id): {
                "eval_id": r.eval_id,
                "row_id": r.row_id,
                "position": r.position,
                "error": r.error,
                "payload": dumps(r.payload),
                "updated_at": now,
            }
            for r in rows
        }
        values = list(unique.values())
        stmt = self._first_wins()
        for start in range(0, len(values), BATCH_SIZE):
            self._execute_rows(conn, stmt, values[start : start + BATCH_SIZE])

    def _first_wins(self) -> Any:
        key = ("first-wins", "eval_rows", ("eval_id", "row_id"))
        if key not in self._statements:
            stmt = self._insert(eval_rows)
            keys = ("eval_id", "row_id")
            values = {c.name: stmt.excluded[c.name] for c in eval_rows.columns if c.name not in keys}
            self._statements[key] = stmt.on_conflict_do_update(
                index_elements=list(keys), set_=values, where=eval_rows.c.error.is_(True)
            )
        return self._statements[key]

    def load_eval_rows(self, eval_id: str) -> list[EvalRowRecord]:
        """An eval run's saved rows, in dataset order."""
        query = (
            select(
                eval_rows.c.eval_id,
                eval_rows.c.row_id,
                eval_rows.c.position,
                eval_rows.c.error,
                eval_rows.c.payload,
            )
            .where(eval_rows.c.eval_id == eval_id)
            .order_by(eval_rows.c.position, eval_rows.c.row_id)
        )
        with self._read() as conn:
            return [row_record(r) for r in conn.execute(query)]

    def scored_row_ids(self, eval_id: str) -> set[str]:
        """Ids of the rows an eval run has saved without an error (the resume plan: errored rows go again)."""
        query = select(eval_rows.c.row_id).where(eval_rows.c.eval_id == eval_id, eval_rows.c.error.is_(False))
        with self._read() as conn:
            return set(conn.execute(query).scalars())
