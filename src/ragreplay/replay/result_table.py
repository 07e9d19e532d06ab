"""A run's cases and results as flat rows: one row a case, the same columns for ``ragreplay export`` (CSV,
Parquet) and the Python API's DataFrame. Values are text, numbers, booleans or ``None``; the case's tags and the
chunk ids are JSON text, so every format holds the same row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice
from typing import Any

from ragreplay.core.costs import total_cost
from ragreplay.core.flat_tables import TableShape
from ragreplay.core.runs import ResultRecord, RunRecord
from ragreplay.core.types import Case
from ragreplay.errors import RagreplayError
from ragreplay.store import Store

RESULT_TABLE = TableShape(
    columns=(
        "run_id",
        "case_id",
        "conversation_id",
        "turn_index",
        "user_id",
        "ts",
        "tags",
        "feedback",
        "query",
        "question",
        "rewritten",
        "old_answer",
        "old_chunk_ids",
        "status",
        "new_answer",
        "new_chunk_ids",
        "latency_ms",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "unpriced_calls",
        "fit",
        "best_guess",
        "judge_reason",
        "verdict",
        "error",
    ),
    kinds={
        "turn_index": "int",
        "rewritten": "bool",
        "latency_ms": "float",
        "tokens_in": "int",
        "tokens_out": "int",
        "cost_usd": "float",
        "unpriced_calls": "int",
    },
)
"""The columns of a result row, in order, and their kinds (documented in docs/export.md)."""

_PAGE = 500


def find_run(store: Store, run_ref: str) -> RunRecord:
    """The run ``run_ref`` names (an id or a unique prefix); a :class:`RagreplayError` with the fix if none."""
    run = store.runs.get_run(run_ref)
    if run is None:
        raise RagreplayError(f"no run matches {run_ref!r}. Fix: pick an id from `ragreplay runs`.")
    return run


def result_rows(store: Store, run: RunRecord) -> Iterator[dict[str, Any]]:
    """The run's rows in case order (conversation, turn), read a page of cases at a time."""
    results = store.runs.iter_results(run.id)
    while page := list(islice(results, _PAGE)):
        cases = store.cases.get_cases([r.case_id for r in page])
        for result in page:
            yield result_row(result, cases.get(result.case_id))


def result_row(result: ResultRecord, case: Case | None) -> dict[str, Any]:
    """One case's row (its case fields empty when the case is no longer in the store)."""
    answer, judgment, rewrite = result.answer, result.judgment, result.rewrite
    question = rewrite.query if rewrite is not None else (case.query if case is not None else None)
    cost_usd, unpriced_calls = total_cost((answer, judgment, rewrite))
    return {
        "run_id": result.run_id,
        "case_id": result.case_id,
        "conversation_id": case.conversation_id if case else None,
        "turn_index": case.turn_index if case else None,
        "user_id": case.user_id if case else None,
        "ts": case.ts.isoformat() if case and case.ts else None,
        "tags": _json(case.tags) if case else None,
        "feedback": str(case.feedback) if case else None,
        "query": case.query if case else None,
        "question": question,
        "rewritten": rewrite.rewritten if rewrite is not None else None,
        "old_answer": case.old_answer if case else None,
        "old_chunk_ids": _json([c.id for c in case.retrieved]) if case else None,
        "status": str(result.status),
        "new_answer": answer.text if answer is not None else None,
        "new_chunk_ids": _json([c.id for c in answer.contexts]) if answer is not None else None,
        "latency_ms": answer.latency_ms if answer is not None else None,
        "tokens_in": _tokens(result, "input"),
        "tokens_out": _tokens(result, "output"),
        "cost_usd": cost_usd,
        "unpriced_calls": unpriced_calls,
        "fit": str(judgment.fit) if judgment is not None else None,
        "best_guess": str(judgment.best_guess) if judgment is not None and judgment.best_guess else None,
        "judge_reason": judgment.reason if judgment is not None else None,
        "verdict": str(result.verdict) if result.verdict is not None else None,
        "error": result.error or (answer.error if answer is not None else None),
    }


def _tokens(result: ResultRecord, side: str) -> int:
    """Tokens of the target's answer and the judge's call together."""
    parts = [p.tokens for p in (result.answer, result.judgment) if p is not None]
    return sum(int(getattr(t, side)) for t in parts)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
