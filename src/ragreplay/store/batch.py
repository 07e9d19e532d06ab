"""Many writes in one transaction: what the async engine's single writer flushes each tick."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, literal_column, select

from ragreplay.core.comparisons import ComparisonRowRecord
from ragreplay.core.runs import ResultRecord, ResultStatus
from ragreplay.core.shadow import ShadowJudgmentRecord
from ragreplay.core.storable import is_storable
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
        self._json = JsonMemo()

    def write_batch(self, batch: WriteBatch) -> dict[tuple[str, str], Rewrite]:
        """Apply ``batch`` in one transaction; returns the rewrite pinned to each (case, rewriter) of
        ``batch.pins``.

        Cache entries and pins keep the first value per key (as :meth:`cache_put` and :meth:`pin_rewrite` do);
        results keep the last record per (run, case), but a result stored ``done`` is never overwritten (first
        wins: two workers that replayed the same case, one whose lease had run out, never replace each other's
        finished result). Rows are de-duplicated first: one multi-row statement may not touch a row twice on
        PostgreSQL.
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
        encode = self._json.to_json
        pin_models = {(case_id, rw): r for case_id, rw, r in reversed(batch.pins)}
        pin_rows = {
            key: {"case_id": key[0], "rewriter": key[1], "data": encode(r), "pinned_at": now}
            for key, r in pin_models.items()
        }
        result_rows = {(r.run_id, r.case_id): result_row(r, now, encode) for r in batch.results}
        pinned: dict[tuple[str, str], Rewrite] = {}
        with self._write() as conn:
            if cache_rows:
                self._execute_rows(conn, self._insert_ignore(llm_cache, ["key"]), list(cache_rows.values()))
            if pin_rows:
                inserted = self._execute_rows(
                    conn, self._insert_ignore(rewrites, ["case_id", "rewriter"]), list(pin_rows.values())
                )
                if inserted == len(pin_rows) and all(map(is_storable, _pin_texts(pin_rows))):
                    # every pin is this batch's, stored as written (SQLite counts the rows inserted): the very
                    # (frozen) rewrites, without reading them back, and the results saving them next find their
                    # JSON in the memo
                    pinned.update(pin_models)
                else:
                    self._read_pins(conn, pin_rows, pin_models, pinned)
            if result_rows:
                self._execute_rows(conn, self._result_upsert(), list(result_rows.values()))
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

    def _result_upsert(self) -> Any:
        """The results' upsert: a row replaced unless it is ``done`` already (its status a literal, not a bound
        parameter, so each row binds only its own values)."""
        cache_key = ("upsert-unless-done", results.name, ("run_id", "case_id"))
        if cache_key not in self._statements:
            stmt = self._insert(results)
            keys = ("run_id", "case_id")
            update = {c.name: stmt.excluded[c.name] for c in results.columns if c.name not in keys}
            done: Any = literal_column(f"'{ResultStatus.DONE.value}'")
            self._statements[cache_key] = stmt.on_conflict_do_update(
                index_elements=list(keys), set_=update, where=results.c.status != done
            )
        return self._statements[cache_key]

    @staticmethod
    def _read_pins(
        conn: Connection,
        pin_rows: dict[tuple[str, str], dict[str, Any]],
        pin_models: dict[tuple[str, str], Rewrite],
        pinned: dict[tuple[str, str], Rewrite],
    ) -> None:
        """The rewrites pinned to the cases of ``pin_rows``, read back: another's pin may have come first."""
        for chunk in chunked(list(dict.fromkeys(case_id for case_id, _ in pin_rows))):
            query = select(rewrites.c.case_id, rewrites.c.rewriter, rewrites.c.data).where(
                rewrites.c.case_id.in_(chunk)
            )
            for case_id, rw, data in conn.execute(query):
                row = pin_rows.get((case_id, rw))
                if row is not None:  # this batch's own rewrite when stored as written (see above)
                    same = data == row["data"]
                    pinned[case_id, rw] = (
                        pin_models[case_id, rw] if same else Rewrite.model_validate_json(data)
                    )


def _pin_texts(pin_rows: dict[tuple[str, str], dict[str, Any]]) -> Iterator[str]:
    for row in pin_rows.values():
        yield row["case_id"]
        yield row["rewriter"]
        yield row["data"]


class JsonMemo:
    """The canonical JSON (:func:`~ragreplay.store.schema.to_json`) of the records written lately, by object.

    A case's rewrite and answer are written again with each of its steps (answered, then judged; the rewrite
    pinned first): the same frozen objects each time, encoded once. Holds each object it remembers (so an
    ``id`` is never another's while remembered), at most ``max_entries`` of them and ``max_chars`` of JSON,
    forgetting the oldest first: between a case's two writes the other cases in flight add a few entries each,
    so the default serves a few hundred cases in flight (more only cost an encoding again), in constant memory.
    """

    def __init__(self, max_entries: int = 1024, max_chars: int = 2_000_000) -> None:
        self._entries: dict[int, tuple[BaseModel, str]] = {}
        self._chars = 0
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._lock = threading.Lock()

    def to_json(self, model: BaseModel | None) -> str | None:
        """``to_json(model)``, remembered."""
        if model is None:
            return None
        entries = self._entries
        entry = entries.get(id(model))
        if entry is not None and entry[0] is model:
            return entry[1]
        text = to_json(model)
        assert text is not None
        with self._lock:
            replaced = entries.pop(id(model), None)  # another thread's, for this very object
            self._chars += len(text) - (0 if replaced is None else len(replaced[1]))
            entries[id(model)] = (model, text)
            while len(entries) > self._max_entries or (self._chars > self._max_chars and len(entries) > 1):
                _, old = entries.pop(next(iter(entries)))
                self._chars -= len(old)
        return text
