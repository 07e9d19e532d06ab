"""Champion vs challengers on the same cases: every side answers, then agreement and blind preference per pair.

The pairwise judge only ever receives two :class:`PairwiseSide` objects (answer, contexts, context dates): it is
never told which one is the champion. Which side it sees first is decided by :func:`judge_pair`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from ragreplay.compare.checks import expected_language, is_wrong_language
from ragreplay.core.compare_stats import CompareRow, Preferred
from ragreplay.core.pairwise import PairwiseSide
from ragreplay.core.types import Answer, Case, Fit
from ragreplay.errors import RagreplayError
from ragreplay.judges.position import OrderMode, PairOutcome, SideWinner, judge_pair
from ragreplay.ports import Judge, PairwiseJudge, Target
from ragreplay.targets.base import answer_safely as answer_safely  # re-exported: the gate imports it here

_PREFERRED: dict[SideWinner, Preferred] = {"x": "champion", "y": "challenger", "tie": "tie"}


@dataclass
class ComparisonSetup:
    """What a comparison runs: the champion, the challengers by name, both judges and the order mode."""

    champion: Target
    challengers: Mapping[str, Target]
    pairwise: PairwiseJudge
    fit_judge: Judge
    order: OrderMode = "both"
    seed: int | None = None
    concurrency: int = 8


def document_dates(target: Target) -> dict[str, date]:
    """Document id -> effective date, for targets over a dated corpus (the built-in RAG); else empty."""
    corpus = getattr(target, "corpus", None)
    documents = getattr(corpus, "documents", ())
    return {d.id: d.effective_date for d in documents if getattr(d, "effective_date", None) is not None}


def side_of(answer: Answer, dates: Mapping[str, date]) -> PairwiseSide:
    """What the pairwise judge sees of one answer: its text, its chunks and, when known, their dates."""
    context_dates = {}
    for chunk in answer.contexts:
        doc = chunk.id.rsplit("#", 1)[0]
        if doc in dates:
            context_dates[chunk.id] = dates[doc]
    return PairwiseSide(answer=answer.text, contexts=list(answer.contexts), context_dates=context_dates)


def _rng(seed: int | None, case_id: str, name: str) -> random.Random:
    # Seeded per case and challenger so a resumed or reordered run draws the same order for each pair.
    return random.Random(f"{seed}:{case_id}:{name}") if seed is not None else random.Random()


async def _judge_one(
    setup: ComparisonSetup,
    case: Case,
    question: str,
    name: str,
    champion: Answer,
    challenger: Answer,
    dates: Mapping[str, Mapping[str, date]],
) -> tuple[CompareRow, PairOutcome | None]:
    expected = expected_language(question, case.tags)
    base: dict[str, Any] = {
        "case_id": case.id,
        "challenger": name,
        "question": question,
        "tags": dict(case.tags),
        "champion_answer": champion.text,
        "challenger_answer": challenger.text,
        "champion_latency_ms": champion.latency_ms,
        "challenger_latency_ms": challenger.latency_ms,
        "champion_cost_usd": champion.cost_usd,
        "challenger_cost_usd": challenger.cost_usd,
        "champion_unpriced_calls": champion.unpriced_calls,
        "challenger_unpriced_calls": challenger.unpriced_calls,
        "champion_wrong_language": is_wrong_language(champion.text, expected),
        "challenger_wrong_language": is_wrong_language(challenger.text, expected),
    }
    errors = [f"{side}: {a.error}" for side, a in (("champion", champion), (name, challenger)) if a.error]
    if errors:
        return CompareRow(**base, error="; ".join(errors)), None
    # Agreement: the champion's answer plays the old answer, the challenger's the new one.
    as_old = case.model_copy(update={"old_answer": champion.text, "retrieved": champion.contexts})
    fit_task = setup.fit_judge.judge(as_old, question, challenger)
    pair_task = judge_pair(
        setup.pairwise,
        question,
        side_of(champion, dates["champion"]),
        side_of(challenger, dates[name]),
        setup.order,
        _rng(setup.seed, case.id, name),
    )
    judgment, outcome = await asyncio.gather(fit_task, pair_task, return_exceptions=True)
    reasons: list[str] = []
    agreement = Fit.UNSCORABLE
    if isinstance(judgment, BaseException):
        _reraise_fatal(judgment)
        reasons.append(f"FIT judge failed: {type(judgment).__name__}: {judgment}")
    elif judgment.fit in (Fit.FIT, Fit.NO_FIT):
        agreement = judgment.fit
    if isinstance(outcome, BaseException):
        # A judge that fails is "could not score" for this pair, never a crash of the whole comparison.
        _reraise_fatal(outcome)
        reasons.append(f"pairwise judge failed: {type(outcome).__name__}: {outcome}")
        return CompareRow(**base, agreement=agreement, reason=" | ".join(reasons)), None
    reasons += [j.reason for _, j in outcome.judgments if j.reason]
    row = CompareRow(
        **base,
        agreement=agreement,
        preference=_PREFERRED[outcome.winner] if outcome.winner is not None else None,
        consistent=outcome.consistent,
        reason=" | ".join(reasons),
    )
    return row, outcome


def _reraise_fatal(exc: BaseException) -> None:
    """Cancellation, Ctrl-C and user errors stop the comparison; other judge failures are recorded."""
    if not isinstance(exc, Exception) or isinstance(exc, RagreplayError):
        raise exc


@dataclass(frozen=True)
class CaseComparison:
    """One case compared: a row per challenger, the pair outcomes that could be judged, and the models the
    answers named."""

    case: Case
    rows: list[CompareRow]
    outcomes: dict[str, PairOutcome]
    generators: dict[str, str]


async def compare_case(
    setup: ComparisonSetup, case: Case, question: str, dates: Mapping[str, Mapping[str, date]]
) -> CaseComparison:
    """Answer one case with every side and judge each challenger against the champion."""
    sides: dict[str, Target] = {"champion": setup.champion, **setup.challengers}
    answers = await asyncio.gather(*(answer_safely(t, question, case) for t in sides.values()))
    by_side = dict(zip(sides, answers, strict=True))
    generators = {name: str(a.extra["model"]) for name, a in by_side.items() if a.extra.get("model")}
    judged = await asyncio.gather(
        *(
            _judge_one(setup, case, question, name, by_side["champion"], by_side[name], dates)
            for name in setup.challengers
        )
    )
    rows = [row for row, _ in judged]
    outcomes = {name: o for name, (_, o) in zip(setup.challengers, judged, strict=True) if o is not None}
    return CaseComparison(case, rows, outcomes, generators)


def side_dates(setup: ComparisonSetup) -> dict[str, dict[str, date]]:
    """Each side's document dates (see :func:`document_dates`), by side name."""
    sides: dict[str, Target] = {"champion": setup.champion, **setup.challengers}
    return {name: document_dates(target) for name, target in sides.items()}
