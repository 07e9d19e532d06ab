"""Judgments of review items keyed by judge version: one per (queue, item key, judge version).

A re-judge asks :meth:`ReviewJudgmentsRepository.judged_keys` what a version has judged already, so it judges
only the rest, and saves each new judgment through the jobs' writer (:meth:`put_review_judgments`, inside the
batch's transaction). Calibration reads them back with :meth:`load_review_judgments`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, select

from ragreplay.core.review import JudgeDecision
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import dumps, review_judgments


class ReviewJudgmentRecord(BaseModel):
    """A judge version's decision on one review item, with what the judging cost and said (``details``:
    order consistency, calls, tokens, cost, reasons)."""

    model_config = ConfigDict(frozen=True)

    queue_id: str
    key: str
    decision: JudgeDecision
    judged_at: datetime
    details: dict[str, Any] = {}

    @property
    def judge_version(self) -> str:
        """The version the decision is keyed by."""
        return self.decision.version


class ReviewJudgmentsRepository(StoreBase):
    """Saving and reading the judgments of review items, by judge version."""

    def save_review_judgments(self, records: Sequence[ReviewJudgmentRecord]) -> None:
        """Upsert ``records`` in one transaction."""
        if records:
            with self._write() as conn:
                self.put_review_judgments(conn, records)

    def put_review_judgments(self, conn: Connection, records: Sequence[ReviewJudgmentRecord]) -> None:
        """Upsert ``records`` inside the caller's transaction ``conn`` (a later judgment of the same item by the
        same version replaces the earlier one)."""
        rows = {
            (r.queue_id, r.key, r.judge_version): {
                "queue_id": r.queue_id,
                "key": r.key,
                "judge_version": r.judge_version,
                "judge": f"{r.decision.judge}@{r.decision.prompt_version}",
                "decision": dumps(
                    {"decision": r.decision.model_dump(mode="json"), "details": dict(r.details)}
                ),
                "judged_at": r.judged_at,
            }
            for r in records
        }
        if rows:
            conn.execute(
                self._upsert(review_judgments, ["queue_id", "key", "judge_version"]), list(rows.values())
            )

    def judged_keys(self, judge_version: str) -> set[tuple[str, str]]:
        """The ``(queue_id, key)`` of every item ``judge_version`` has judged."""
        query = select(review_judgments.c.queue_id, review_judgments.c.key).where(
            review_judgments.c.judge_version == judge_version
        )
        with self._read() as conn:
            return {(q, k) for q, k in conn.execute(query)}

    def load_review_judgments(
        self, queue_ids: Iterable[str] | None = None, judge_version: str | None = None
    ) -> list[ReviewJudgmentRecord]:
        """The judgments (of items of ``queue_ids``, by ``judge_version``; all when ``None``), ordered by
        queue, key and version."""
        base = select(
            review_judgments.c.queue_id,
            review_judgments.c.key,
            review_judgments.c.decision,
            review_judgments.c.judged_at,
        ).order_by(review_judgments.c.queue_id, review_judgments.c.key, review_judgments.c.judge_version)
        if judge_version is not None:
            base = base.where(review_judgments.c.judge_version == judge_version)
        queries = (
            [base]
            if queue_ids is None
            else [base.where(review_judgments.c.queue_id.in_(part)) for part in chunked(sorted(queue_ids))]
        )
        out = []
        with self._read() as conn:
            for query in queries:
                for queue_id, key, text, at in conn.execute(query):
                    data = json.loads(text)
                    out.append(
                        ReviewJudgmentRecord(
                            queue_id=queue_id,
                            key=key,
                            decision=JudgeDecision.model_validate(data["decision"]),
                            judged_at=at,
                            details=data.get("details", {}),
                        )
                    )
        return out
