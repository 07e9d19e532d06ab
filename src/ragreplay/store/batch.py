"""Many writes in one transaction: what the async engine's single writer flushes each tick."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select

from ragreplay.core.comparisons import ComparisonRowRecord
from ragreplay.core.runs import ResultRecord
from ragreplay.core.shadow import ShadowJudgmentRecord
from ragreplay.core.types import Rewrite
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.comparisons import ComparisonsRepository
from ragreplay.store.evals import EvalRowRecord, EvalsRepository
from ragreplay.store.gates import GateItemRecord, GatesRepository
from ragreplay.store.review_judgments import ReviewJudgmentRecord, ReviewJudgmentsRepository
from ragreplay.store.runs import result_row
from ragreplay.store.schema import dumps, llm_cache, results, rewrites, to_json
from ragreplay.store.shadow_judgments import ShadowJudgmentsRepository


@dataclass(frozen=True)
class CacheEntry:
    """One model response to cache."""

    key: str
    model: str
    request: Mapping[str, Any]
    response: Mapping[str, Any]


@dataclass
class WriteBatch:
    """Writes gathered from many coroutines; applied in one transaction, cache rows first."""

    cache: list[CacheEntry] = field(default_factory=list)
    pins: list[tuple[str, str, Rewrite]] = field(default_factory=list)
    """(case id, rewriter, rewrite): pins are per rewriter version."""
    results: list[ResultRecord] = field(default_factory=list)
    comparison_rows: list[ComparisonRowRecord] = field(default_factory=list)
    shadow_judgments: list[ShadowJudgmentRecord] = field(default_factory=list)
    gate_items: list[GateItemRecord] = field(default_factory=list)
    review_judgments: list[ReviewJudgmentRecord] = field(default_factory=list)
    eval_rows: list[EvalRowRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return (
            len(self.cache)
            + len(self.pins)
            + len(self.results)
            + len(self.comparison_rows)
            + len(self.shadow_judgments)
            + len(self.gate_items)
            + len(self.review_judgments)
            + len(self.eval_rows)
        )


class BatchWriter(StoreBase):
    """Applies a :class:`WriteBatch` atomically, writing through the repositories that own the rows."""

    def __init__(
        self,
        engine: Engine,
        display_url: str,
        comparisons: ComparisonsRepository,
        shadow_judgments: ShadowJudgmentsRepository,
        gates: GatesRepository,
        review_judgments: ReviewJudgmentsRepository,
        evals: EvalsRepository,
    ) -> None:
        super().__init__(engine, display_url)
        self._comparisons = comparisons
        self._shadow_judgments = shadow_judgments
        self._gates = gates
        self._review_judgments = review_judgments
        self._evals = evals

    def write_batch(self, batch: WriteBatch) -> dict[tuple[str, str], Rewrite]:
        """Apply ``batch`` in one transaction; returns the rewrite pinned to each (case, rewriter) of
        ``batch.pins``.

        Cache entries and pins keep the first value per key (as :meth:`cache_put` and :meth:`pin_rewrite` do);
        results keep the last record per (run, case). Rows are de-duplicated first: one multi-row statement may
        not touch a row twice on PostgreSQL.
        """
        now = datetime.now(UTC)
        cache_rows = {
            e.key: {
                "key": e.key,
                "model": e.model,
                "request": dumps(e.request),
                "response": dumps(e.response),
                "created_at": now,
            }
            for e in reversed(batch.cache)
        }
        pin_rows = {
            (case_id, rw): {"case_id": case_id, "rewriter": rw, "data": to_json(r), "pinned_at": now}
            for case_id, rw, r in reversed(batch.pins)
        }
        result_rows = {(r.run_id, r.case_id): result_row(r) for r in batch.results}
        pinned: dict[tuple[str, str], Rewrite] = {}
        with self._write() as conn:
            if cache_rows:
                self._execute_rows(conn, self._insert_ignore(llm_cache, ["key"]), list(cache_rows.values()))
            if pin_rows:
                self._execute_rows(
                    conn, self._insert_ignore(rewrites, ["case_id", "rewriter"]), list(pin_rows.values())
                )
                for chunk in chunked(list(dict.fromkeys(case_id for case_id, _ in pin_rows))):
                    query = select(rewrites.c.case_id, rewrites.c.rewriter, rewrites.c.data).where(
                        rewrites.c.case_id.in_(chunk)
                    )
                    for case_id, rw, data in conn.execute(query):
                        if (case_id, rw) in pin_rows:
                            pinned[case_id, rw] = Rewrite.model_validate_json(data)
            if result_rows:
                self._execute_rows(
                    conn, self._upsert(results, ["run_id", "case_id"]), list(result_rows.values())
                )
            if batch.comparison_rows:
                self._comparisons.put_comparison_rows(conn, batch.comparison_rows)
            if batch.shadow_judgments:
                self._shadow_judgments.put_shadow_judgments(conn, batch.shadow_judgments)
            if batch.gate_items:
                self._gates.put_gate_items(conn, batch.gate_items)
            if batch.review_judgments:
                self._review_judgments.put_review_judgments(conn, batch.review_judgments)
            if batch.eval_rows:
                self._evals.put_eval_rows(conn, batch.eval_rows)
        return pinned
