"""One gate item: both sides answer, the pairwise judge compares them blind in both orders, and a wound with a
reviewer's correct answer is also judged against it. Run by the one job runner; each item saved as it ends."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ragreplay.compare.case_comparison import answer_safely, side_of
from ragreplay.core.gate import ItemOutcome
from ragreplay.core.regset import SetItem
from ragreplay.core.shadow import live_case
from ragreplay.core.types import Answer, Case, Fit
from ragreplay.errors import RagreplayError
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.position import PairOutcome, judge_pair, side_scores
from ragreplay.ports import Judge, PairwiseJudge, Target
from ragreplay.store.gates import GateItemRecord

_WINNER = {"x": "champion", "y": "challenger", "tie": "tie"}


@dataclass(frozen=True)
class GateSides:
    """What a gate runs: the two targets, the pairwise judge, and the FIT judge for reviewed answers."""

    champion: Target
    challenger: Target
    pairwise: PairwiseJudge
    fit_judge: Judge
    seed: int = 0


def item_case(item: SetItem) -> Case:
    """The case the targets are asked: the item's standalone question and tags (no history: it is already
    standalone)."""
    c = item.candidate
    return live_case(item.key, c.question, None, c.tags, case_id=item.key)


async def judge_item(
    sides: GateSides, item: SetItem, dates: Mapping[str, Mapping[str, date]]
) -> dict[str, Any]:
    """Answer and judge one item; returns the item's payload (an :class:`ItemOutcome` plus the answers and
    the judges' reasons). A side or judge that fails is recorded, never raised (except user errors)."""
    case = item_case(item)
    question = item.candidate.question
    champion, challenger = await asyncio.gather(
        answer_safely(sides.champion, question, case), answer_safely(sides.challenger, question, case)
    )
    base: dict[str, Any] = {"key": item.key, "stratum": item.stratum, "question": question}
    extra: dict[str, Any] = {"champion_answer": champion.text, "challenger_answer": challenger.text}
    failed = [f"{n}: {a.error}" for n, a in (("champion", champion), ("challenger", challenger)) if a.error]
    if failed:
        return _payload(ItemOutcome(**base, error="; ".join(failed)), extra, [], champion, challenger)
    # A reviewer's correct answer (an open wound's, a regression set item's) is also the pairwise judge's
    # reference: which side is closer to it says more than either answer alone.
    reference = item.candidate.reference_answer
    pair = judge_pair(
        sides.pairwise,
        question,
        side_of(champion, dates["champion"]),
        side_of(challenger, dates["challenger"]),
        "both",
        random.Random(f"{sides.seed}:{item.key}"),
        reference=reference,
    )
    checked = (
        _against_reference(sides.fit_judge, case, question, reference, challenger) if reference else None
    )
    results = await asyncio.gather(pair, *([checked] if checked else []), return_exceptions=True)
    outcome, matches = results[0], results[1] if checked else None
    for found in results:
        if isinstance(found, BaseException) and (
            not isinstance(found, Exception) or isinstance(found, RagreplayError)
        ):
            raise found
    if isinstance(outcome, BaseException):
        error = f"pairwise judge failed: {type(outcome).__name__}: {outcome}"
        return _payload(ItemOutcome(**base, error=error), extra, [], champion, challenger)
    assert isinstance(outcome, PairOutcome)
    scores = side_scores(outcome)
    result = ItemOutcome(
        **base,
        winner=_WINNER[outcome.winner] if outcome.winner is not None else None,
        consistent=outcome.consistent,
        champion_score=scores.x_mean,
        challenger_score=scores.y_mean,
        matches_reference=matches if isinstance(matches, bool) else None,
    )
    reasons = [j.reason for _, j in outcome.judgments if j.reason]
    extra["judge"] = {
        "calls": len(outcome.judgments),
        "input_tokens": sum(j.tokens.input for _, j in outcome.judgments),
        "output_tokens": sum(j.tokens.output for _, j in outcome.judgments),
        "cost_usd": sum(j.cost_usd for _, j in outcome.judgments),
        "unpriced_calls": sum(j.unpriced_calls for _, j in outcome.judgments),
    }
    return _payload(result, extra, reasons, champion, challenger)


async def _against_reference(
    judge: Judge, case: Case, question: str, reference: str, challenger: Answer
) -> bool | None:
    """Does the challenger's answer fit the reviewer's correct answer? ``None`` when unscorable."""
    as_reference = case.model_copy(update={"old_answer": reference})
    judgment = await judge.judge(as_reference, question, challenger)
    return {Fit.FIT: True, Fit.NO_FIT: False}.get(judgment.fit)


def _payload(
    outcome: ItemOutcome, extra: dict[str, Any], reasons: list[str], champion: Answer, challenger: Answer
) -> dict[str, Any]:
    judge = extra.get("judge", {})
    cost = champion.cost_usd + challenger.cost_usd + float(judge.get("cost_usd", 0.0))
    unpriced = champion.unpriced_calls + challenger.unpriced_calls + int(judge.get("unpriced_calls", 0))
    return {
        "outcome": outcome.model_dump(mode="json"),
        **extra,
        "reason": " | ".join(reasons),
        "cost_usd": cost,
        "unpriced_calls": unpriced,
        # each side's cost per answer, measured: the next gate's estimate prices this target version with it
        # (None: no answer, or a model call of unknown price in it)
        "target_cost_usd": {
            "champion": None if champion.error or champion.unpriced_calls else champion.cost_usd,
            "challenger": None if challenger.error or challenger.unpriced_calls else challenger.cost_usd,
        },
        "latency_ms": {"champion": champion.latency_ms, "challenger": challenger.latency_ms},
    }


@dataclass
class GateJob:
    """The gate as a job of the one runner: each item answered, judged and saved through the writer."""

    sides: GateSides
    writer: StoreWriter
    gate_id: str
    dates: dict[str, dict[str, date]] = field(default_factory=dict)
    on_item: Callable[[ItemOutcome], None] | None = None
    saved: dict[str, GateItemRecord] = field(default_factory=dict)
    """Every item this job saved, by key: the gate is evaluated from them without reading them back."""

    async def run_one(self, item: SetItem) -> ItemOutcome:
        """Judge one item and save it; returns once it is committed."""
        payload = await judge_item(self.sides, item, self.dates)
        record = GateItemRecord(gate_id=self.gate_id, key=item.key, stratum=item.stratum, payload=payload)
        await self.writer.save_gate_items([record])
        self.saved[item.key] = record
        outcome = ItemOutcome.model_validate(payload["outcome"])
        if self.on_item is not None:
            self.on_item(outcome)
        return outcome

    def count(self, progress: Progress, result: ItemOutcome) -> None:
        """An item whose side or judge failed is an error; one the judge could not score is unscorable."""
        progress.errors += result.error is not None
        progress.unscorable += result.error is None and result.winner is None
