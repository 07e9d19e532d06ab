"""`ragreplay eval` runs and their rows' scores, saved as each row is scored; the rows' payloads are the eval
layer's JSON (metric values, undetermined reasons, the judge's counts), kept opaque by the store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Row, select, update

from ragreplay.core.runs import RunStatus
from ragreplay.store.base import BATCH_SIZE, StoreBase, unique_by_prefix
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import dumps, eval_rows, eval_runs

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


def _record(row: Row[Any]) -> EvalRunRecord:
    data = row._asdict()
    data["config"] = json.loads(data["config"])
    data["summary"] = json.loads(data["summary"]) if data["summary"] is not None else None
    return EvalRunRecord.model_validate(data)


class EvalsRepository(StoreBase):
    """Creating eval runs, finding the one to resume, saving rows' scores and reading them back."""

    def create_eval(self, record: EvalRunRecord) -> None:
        """Store a new eval run; :class:`StoreError` if its id is taken."""
        row = record.model_dump(mode="python")
        row["status"] = record.status.value
        row["config"] = dumps(record.model_dump(mode="json")["config"])
        row["summary"] = None if record.summary is None else dumps(record.summary)
        with self._write() as conn:
            if conn.execute(select(eval_runs.c.id).where(eval_runs.c.id == record.id)).first():
                raise StoreError(
                    f"An eval run with id {record.id!r} already exists in the store at {self.url}."
                )
            conn.execute(eval_runs.insert(), [row])

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
        """Insert or replace rows' scores, keyed by (eval run, row id), in one transaction."""
        with self._write() as conn:
            self.put_eval_rows(conn, rows)

    def put_eval_rows(self, conn: Connection, rows: Sequence[EvalRowRecord]) -> None:
        """Insert or replace rows' scores inside the caller's transaction ``conn``."""
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
        stmt = self._upsert(eval_rows, ["eval_id", "row_id"])
        for start in range(0, len(values), BATCH_SIZE):
            self._execute_rows(conn, stmt, values[start : start + BATCH_SIZE])

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
            return [
                EvalRowRecord(
                    eval_id=r.eval_id,
                    row_id=r.row_id,
                    position=r.position,
                    error=bool(r.error),
                    payload=json.loads(r.payload),
                )
                for r in conn.execute(query)
            ]

    def scored_row_ids(self, eval_id: str) -> set[str]:
        """Ids of the rows an eval run has saved without an error (the resume plan: errored rows go again)."""
        query = select(eval_rows.c.row_id).where(eval_rows.c.eval_id == eval_id, eval_rows.c.error.is_(False))
        with self._read() as conn:
            return set(conn.execute(query).scalars())
