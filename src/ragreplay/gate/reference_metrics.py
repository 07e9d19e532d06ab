"""Eval metrics in the gate's report (``--metrics lexical``): on every gate item whose question has a reviewer's
correct answer, the lexical metrics (BLEU, ROUGE-L, token F1, exact match, as ``ragreplay eval`` scores them) of
the champion's and the challenger's answers against it, and the paired difference per metric (challenger minus
champion: bootstrap interval, sign-flip p-value, Holm across the metrics: :mod:`ragreplay.core.eval_diff`).

It reads the answers the gate saved and the regression set's items: no model is called, nothing is stored, and it
never changes the gate's decision (the bars decide). An item whose side failed is counted, never paired.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ragreplay.core.eval import EvalRow, RowScores
from ragreplay.core.eval_diff import RowsDiff, diff_rows
from ragreplay.errors import ConfigError
from ragreplay.evaluation.identity import LEXICAL_METRICS
from ragreplay.evaluation.run import lexical_scores
from ragreplay.gate.run import GateReport
from ragreplay.store import Store

GATE_METRICS = ("lexical",)
"""The metric families ``--metrics`` takes: each costs no model call."""


@dataclass(frozen=True)
class ReferenceMetrics:
    """Champion vs challenger against the reviewers' answers: how many gate items have one, how many of those
    were paired (both sides answered) and the per-metric paired differences (A: champion, B: challenger)."""

    family: str
    with_reference: int
    diff: RowsDiff

    def as_json(self) -> dict[str, object]:
        """JSON-ready: the family, the counts and every metric's figures."""
        return {
            "family": self.family,
            "with_reference": self.with_reference,
            "paired": self.diff.paired,
            "errored": self.diff.errored,
            "metrics": [m.model_dump(mode="json") for m in self.diff.metrics],
        }


def check_metrics(family: str | None) -> str | None:
    """``family`` when it is one of :data:`GATE_METRICS` (or ``None``); :class:`ConfigError` naming the fix."""
    if family is not None and family not in GATE_METRICS:
        raise ConfigError(f"--metrics {family!r}: choose one of {', '.join(GATE_METRICS)}")
    return family


def reviewed_answers(store: Store, report: GateReport) -> dict[str, str]:
    """Item key -> the reviewer's correct answer, for the gate's set items that have a non-blank one."""
    return {
        item.key: item.candidate.reference_answer
        for item in store.regsets.load_items(report.regset.id)
        if item.candidate.reference_answer and item.candidate.reference_answer.strip()
    }


def _side(key: str, answer: object, reference: str, error: str | None) -> RowScores:
    if error is not None or not isinstance(answer, str):
        return RowScores(row_id=key, error=error or "no answer saved")
    row = EvalRow(id=key, question="", answer=answer, reference=reference)
    return RowScores(row_id=key, metrics=lexical_scores(row))


def reference_metrics(
    report: GateReport, references: Mapping[str, str], family: str = "lexical", seed: int = 0
) -> ReferenceMetrics:
    """The ``family`` metrics of both sides on the gate's items with a reference, and their paired
    differences (seeded: the same gate gives the same figures)."""
    check_metrics(family)
    champion: list[RowScores] = []
    challenger: list[RowScores] = []
    for outcome in report.outcomes:
        reference = references.get(outcome.key)
        if reference is None:
            continue
        payload = report.payloads.get(outcome.key, {})
        champion.append(_side(outcome.key, payload.get("champion_answer"), reference, outcome.error))
        challenger.append(_side(outcome.key, payload.get("challenger_answer"), reference, outcome.error))
    diff = diff_rows(champion, challenger, LEXICAL_METRICS, seed)
    return ReferenceMetrics(family=family, with_reference=len(champion), diff=diff)


def gate_reference_metrics(store: Store, report: GateReport, family: str | None) -> ReferenceMetrics | None:
    """:func:`reference_metrics` with the set's reviewed answers, or ``None`` when ``family`` is ``None``."""
    if check_metrics(family) is None:
        return None
    return reference_metrics(report, reviewed_answers(store, report), family or "lexical")
