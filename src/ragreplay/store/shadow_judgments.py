"""Shadow judgments in the store: saved together with the judged mark of their rows, read back joined to them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Row, func, select, update

from ragreplay.core.types import Fit
from ragreplay.shadow.types import ShadowRow
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import dumps, shadow_judgments, shadow_rows
from ragreplay.store.shadow import _row as shadow_row_of


class ShadowJudgmentRecord(BaseModel):
    """The judged outcome of one shadow row: agreement (``fit``), preference (``winner``: ``x`` is the
    champion, ``y`` the candidate), order consistency, the judges, and a JSON ``payload`` (reasons, the pair
    outcome, the order mode). ``error`` says why a row could not be judged; such rows are kept, not dropped."""

    model_config = ConfigDict(frozen=True)

    row_id: str
    challenger: str
    judged_at: datetime
    fit: Fit | None = None
    winner: Literal["x", "y", "tie"] | None = None
    consistent: bool | None = None
    judge: str
    judge_prompt_version: str
    fit_judge: str
    fit_judge_prompt_version: str
    error: str | None = None
    payload: dict[str, Any] = {}


class ShadowJudgmentsMixin(StoreBase):
    """Saving shadow judgments (marking their rows judged in the same transaction) and reading them back."""

    def save_shadow_judgments(self, records: Sequence[ShadowJudgmentRecord]) -> None:
        """Upsert ``records`` and set each row's ``judged_at``, all in one transaction."""
        if not records:
            return
        with self._write() as conn:
            conn.execute(self._upsert(shadow_judgments, ["row_id"]), [_values(r) for r in records])
            by_time: dict[datetime, list[str]] = {}
            for record in records:
                by_time.setdefault(record.judged_at, []).append(record.row_id)
            for at, ids in by_time.items():
                for part in chunked(ids):
                    conn.execute(update(shadow_rows).where(shadow_rows.c.id.in_(part)).values(judged_at=at))

    def count_unjudged_shadow_rows(self, since: datetime | None = None) -> int:
        """How many rows with ``ts >= since`` (all when ``None``) are not judged yet."""
        query = select(func.count()).select_from(shadow_rows).where(shadow_rows.c.judged_at.is_(None))
        if since is not None:
            query = query.where(shadow_rows.c.ts >= since)
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def load_shadow_judgments(
        self, since: datetime | None = None
    ) -> list[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """Every judged row with ``ts >= since`` (all when ``None``) with its judgment, oldest first."""
        labelled = [c.label(f"j_{c.name}") for c in shadow_judgments.c]
        query = (
            select(shadow_rows, *labelled)
            .join(shadow_judgments, shadow_judgments.c.row_id == shadow_rows.c.id)
            .order_by(shadow_rows.c.ts, shadow_rows.c.id)
        )
        if since is not None:
            query = query.where(shadow_rows.c.ts >= since)
        with self._read() as conn:
            return [(shadow_row_of(r), _record(r)) for r in conn.execute(query)]


def _values(record: ShadowJudgmentRecord) -> dict[str, Any]:
    values = record.model_dump(exclude={"payload"})
    values["fit"] = None if record.fit is None else record.fit.value
    values["payload"] = dumps(record.payload)
    return values


def _record(r: Row[Any]) -> ShadowJudgmentRecord:
    m = r._mapping
    return ShadowJudgmentRecord(
        row_id=m["j_row_id"],
        challenger=m["j_challenger"],
        judged_at=m["j_judged_at"],
        fit=None if m["j_fit"] is None else Fit(m["j_fit"]),
        winner=m["j_winner"],
        consistent=m["j_consistent"],
        judge=m["j_judge"],
        judge_prompt_version=m["j_judge_prompt_version"],
        fit_judge=m["j_fit_judge"],
        fit_judge_prompt_version=m["j_fit_judge_prompt_version"],
        error=m["j_error"],
        payload=json.loads(m["j_payload"]),
    )
