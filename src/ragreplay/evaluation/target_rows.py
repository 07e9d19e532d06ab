"""A target answering eval rows: the case it is asked (the row's question, tags and earlier turns), the row with
the target's answer and contexts in place of its own, the answers an interrupted run saved (so a resume never asks
the target twice for a row), and a row's tracing figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragreplay.core.eval import EvalContext, EvalRow, RowScores
from ragreplay.core.eval_tracing import RowTrace, row_trace
from ragreplay.core.types import Answer, Case, Feedback, Message, Role
from ragreplay.evaluation.judged import JudgedRow
from ragreplay.ports import Target
from ragreplay.store import Store
from ragreplay.targets.config import read_target_file
from ragreplay.targets.cost import TargetPricing, target_pricing
from ragreplay.targets.loader import target_from_config

UNSCORED = "answered by the target, not scored yet (interrupted): run the same command again"
"""The error of a row saved between the target's answer and the judge's: the resume scores it without asking the
target again."""


@dataclass(frozen=True)
class EvalTarget:
    """The target that answers every row, how its answers are priced, and the file it was read from."""

    target: Target
    pricing: TargetPricing
    source: str

    def describe(self) -> dict[str, str]:
        """What the run's record keeps of it: name, version, file and how its cost is known."""
        return {
            "name": self.target.name,
            "version": self.target.version,
            "file": self.source,
            "cost": self.pricing.basis,
        }


def label_tags(labels: tuple[str, ...]) -> dict[str, str]:
    """A row's ``key=value`` labels as the case's tags (what ``{tags.key}`` in a target's filters reads);
    plain labels have no value and are left out."""
    tags: dict[str, str] = {}
    for label in labels:
        key, sep, value = label.partition("=")
        if sep and key.strip():
            tags.setdefault(key.strip(), value.strip())
    return tags


def row_case(row: EvalRow) -> Case:
    """The case a target is asked for ``row``: its question, tags and earlier turns. An eval row has no user
    feedback: ``feedback`` is a placeholder targets must not read (as for live traffic)."""
    history = tuple(Message(role=Role(turn.role), content=turn.content) for turn in row.history)
    return Case(
        id=f"eval_{row.id}",
        conversation_id=row.id,
        turn_index=len(history),
        query=row.question,
        history=history,
        old_answer="",
        feedback=Feedback.GOOD,
        tags=label_tags(row.tags),
    )


def answered_row(row: EvalRow, answer: Answer) -> EvalRow:
    """``row`` with the target's answer and contexts (in its rank order) in place of its own; the judgments,
    reference and tags are kept, so the retrieval metrics rank the target's chunks."""
    contexts = tuple(EvalContext(id=c.id, text=c.text or "") for c in answer.contexts)
    return row.model_copy(update={"answer": answer.text, "contexts": contexts, "retrieved": None})


def saved_answers(store: Store, eval_id: str) -> dict[str, Answer]:
    """The answers an earlier attempt of ``eval_id`` saved for rows not scored yet (errored or interrupted),
    by row id; a failed answer is not kept (the target is asked again)."""
    out: dict[str, Answer] = {}
    for record in store.evals.load_eval_rows(eval_id):
        if not record.error:
            continue
        scores = RowScores.model_validate(record.payload)
        if scores.target_answer is not None and scores.target_answer.error is None:
            out[record.row_id] = scores.target_answer
    return out


def _stages(answer: Answer) -> dict[str, float]:
    raw: Any = answer.extra.get("stages_ms")
    if not isinstance(raw, Mapping):
        return {}
    return {
        k: float(v)
        for k, v in raw.items()
        if k in ("retrieval", "generation") and isinstance(v, int | float) and not isinstance(v, bool)
    }


def trace_of(
    answer: Answer | None,
    pricing: TargetPricing | None,
    judged: JudgedRow | None,
    judge_priced: bool,
) -> RowTrace:
    """A row's tracing from the target's ``answer`` (``None`` without a target) and the ``judged`` calls
    (``None`` without a judge); the judge's cost is unknown unless ``judge_priced`` or every reply came from
    the cache (free)."""
    judge = judged or JudgedRow()
    return row_trace(
        target_ms=answer.latency_ms if answer is not None else None,
        stages_ms=_stages(answer) if answer is not None else {},
        judged=judged is not None and judged.calls > 0,
        judging_ms=judge.latency_ms,
        judge_cached=judge.cached_calls > 0,
        target_tokens=(answer.tokens.input, answer.tokens.output) if answer is not None else (0, 0),
        target_cost_usd=pricing.cost_of(answer) if answer is not None and pricing is not None else 0.0,
        judge_tokens=(judge.tokens.input, judge.tokens.output),
        judge_cost_usd=judge.cost_usd
        if (judge_priced or judge.cached_calls == judge.calls) and not judge.unpriced_calls
        else None,
    )


def load_eval_target(path: Path) -> EvalTarget:
    """The target of the YAML file at ``path`` with the pricing of its answers; :class:`ConfigError` naming the
    file and the fix for any problem in it."""
    spec = read_target_file(path)
    target = target_from_config(spec.target, path.parent, spec.name or path.stem, source=str(path))
    return EvalTarget(target, target_pricing(spec.target), str(path))
