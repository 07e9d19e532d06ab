"""Re-judging the human-labelled items with a (changed) judge: the plan, its cost estimate, and the job.

The plan is every reviewed item that the judge's version has not judged: neither kept on the item when its
queue was built nor in ``store.review_judgments``. Each is judged blind in both A/B orders (as the pairwise judge
always is) through the one job runner, and saved through the one writer as it ends, so a killed re-judge
resumes where it stopped; the model cache answers any call already made. Before a call, :func:`estimate_rejudge`
says what the plan costs: the calls, how many of them the cache already holds, tokens and dollars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from ragreplay.core.chat import ChatRequest
from ragreplay.core.judge_version import JudgeVersion
from ragreplay.core.pairwise import PairwiseSide
from ragreplay.core.review import HumanWinner, JudgeDecision, ReviewItem, ReviewSide
from ragreplay.core.types import RetrievedChunk, TokenUsage
from ragreplay.errors import RagreplayError
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.position import PairOutcome, judge_pair
from ragreplay.ports import CacheBackend, PairwiseJudge
from ragreplay.providers.cache import cache_key
from ragreplay.providers.pricing import Price, lookup_price
from ragreplay.review.calibration import Labelled
from ragreplay.store import Store
from ragreplay.store.review_judgments import ReviewJudgmentRecord

ORDERS_PER_ITEM = 2
"""Both A/B orders: the pairwise judge's position-bias rule."""
CHARS_PER_TOKEN = 4
"""The input-token estimate: the request's characters over this (the usual rule of thumb for English)."""
ASSUMED_OUTPUT_TOKENS = 250
"""Per call: the JSON reply with every axis scored and a one-sentence reason."""

_WINNERS: dict[str, HumanWinner] = {"x": "champion", "y": "challenger", "tie": "tie"}


@dataclass(frozen=True)
class RejudgeItem:
    """One labelled item to judge, where it lives."""

    queue_id: str
    item: ReviewItem


def rejudge_plan(store: Store, labelled: Labelled, version: JudgeVersion) -> list[RejudgeItem]:
    """The labelled items ``version`` has not judged yet, in queue and key order."""
    done = store.review_judgments.judged_keys(version.id)
    todo = []
    for key in sorted(labelled.items):
        item = labelled.items[key]
        queue_id, item_key = labelled.locations[key]
        kept = item.judge is not None and item.judge.version == version.id
        if not kept and (queue_id, item_key) not in done:
            todo.append(RejudgeItem(queue_id, item))
    return todo


def pairwise_side(side: ReviewSide) -> PairwiseSide:
    """What the judge sees of one side: the answer, its chunks and their documents' dates where known."""
    return PairwiseSide(
        answer=side.answer,
        contexts=[RetrievedChunk(id=c.id, text=c.text) for c in side.chunks],
        context_dates={c.id: c.date for c in side.chunks if c.date is not None},
    )


@runtime_checkable
class RequestBuilding(Protocol):
    """A pairwise judge that asks a chat model, and can show the request it would send."""

    def request(self, question: str, a: PairwiseSide, b: PairwiseSide) -> ChatRequest:
        """The chat request that compares ``a`` (shown as A) with ``b``."""
        ...


@dataclass(frozen=True)
class RejudgeEstimate:
    """What a re-judge will ask for: items, model calls (both orders), the calls the model cache answers, and
    tokens and dollars for the rest; ``cost_usd`` is ``None`` when the model's price is unknown."""

    items: int
    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    model: str
    shared: int = 0
    """Calls identical to an earlier one of the same plan (two items with the same question and answers): the
    cache answers them once the first is made."""

    @property
    def to_call(self) -> int:
        """Calls the model will really be sent."""
        return self.calls - self.cached - self.shared

    def describe(self) -> str:
        """One line for the terminal."""
        if self.calls == 0:
            return f"{self.items} item(s) to judge with {self.model}: no model call (a local judge), $0.00"
        cost = (
            f"price unknown for {self.model} (set `prices:` in ragreplay.yaml)"
            if self.cost_usd is None
            else f"about ${self.cost_usd:.2f}"
        )
        return (
            f"{self.items} item(s) to judge with {self.model}: {self.calls} model call(s) (both orders), "
            f"{self.cached} already in the model cache"
            + (f", {self.shared} the same as another" if self.shared else "")
            + f", {self.to_call} to make: ~{self.input_tokens:,} input "
            f"and ~{self.output_tokens:,} output tokens, {cost} (input counted at {CHARS_PER_TOKEN} characters "
            f"a token, {ASSUMED_OUTPUT_TOKENS} output tokens a call)"
        )


def _requests(judge: RequestBuilding, item: ReviewItem) -> list[ChatRequest]:
    x, y = pairwise_side(item.champion), pairwise_side(item.challenger_side)
    return [judge.request(item.question, x, y), judge.request(item.question, y, x)]


def estimate_rejudge(
    judge: PairwiseJudge,
    todo: Sequence[RejudgeItem],
    cache: CacheBackend,
    prices: Mapping[str, Price] | None = None,
) -> RejudgeEstimate:
    """The estimate for judging ``todo`` with ``judge``; it builds the very requests the judge will send and
    looks each up in ``cache`` (a cached call costs nothing). A judge that calls no model costs nothing."""
    if not isinstance(judge, RequestBuilding):
        return RejudgeEstimate(len(todo), 0, 0, 0, 0, 0.0, judge.name)
    calls = cached = chars = 0
    seen: set[str] = set()
    for entry in todo:
        for request in _requests(judge, entry.item):
            calls += 1
            key = cache_key(judge.name, request)
            if key in seen:
                continue
            seen.add(key)
            if cache.cache_get(key) is not None:
                cached += 1
            else:
                chars += sum(len(m.content) for m in request.messages)
    shared = calls - len(seen)
    usage = TokenUsage(
        input=chars // CHARS_PER_TOKEN, output=(calls - cached - shared) * ASSUMED_OUTPUT_TOKENS
    )
    price = lookup_price(judge.name, prices)
    cost = None if price is None else price.cost(usage)
    return RejudgeEstimate(len(todo), calls, cached, usage.input, usage.output, cost, judge.name, shared)


def decision_of(outcome: PairOutcome, version: JudgeVersion) -> JudgeDecision:
    """A both-orders outcome in champion/challenger terms (``x`` is the champion); axis scores from the order
    that showed the champion first."""
    scores: tuple[dict[str, int], dict[str, int]] = ({}, {})
    for ordering, judgment in sorted(outcome.judgments, key=lambda oj: oj[0] != "xy")[:1]:
        a = judgment.scores_a.as_dict() if judgment.scores_a else {}
        b = judgment.scores_b.as_dict() if judgment.scores_b else {}
        scores = (a, b) if ordering == "xy" else (b, a)
    return JudgeDecision(
        judge=version.judge,
        prompt_version=version.prompt_version,
        winner=None if outcome.winner is None else _WINNERS[outcome.winner],
        scores_champion=scores[0],
        scores_challenger=scores[1],
        judge_version=version.id,
    )


@dataclass(frozen=True)
class RejudgeResult:
    """One item's outcome: its decision (``None`` when the judge failed: nothing is saved, a later run retries
    it), what it cost (priced dollars and unpriced calls, see ``core/costs``), and the failure."""

    decision: JudgeDecision | None
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    error: str | None = None


@dataclass
class RejudgeJob:
    """Re-judging labelled items as a job of the one runner, each decision saved through the writer."""

    judge: PairwiseJudge
    version: JudgeVersion
    writer: StoreWriter

    async def run_one(self, entry: RejudgeItem) -> RejudgeResult:
        """Judge one item in both orders and save the decision; a judge that fails is returned as an error
        (and not saved), except user errors, which stop the job."""
        item = entry.item
        try:
            outcome = await judge_pair(
                self.judge,
                item.question,
                pairwise_side(item.champion),
                pairwise_side(item.challenger_side),
                "both",
            )
        except RagreplayError:
            raise
        except Exception as exc:
            return RejudgeResult(None, error=f"{type(exc).__name__}: {exc}")
        decision = decision_of(outcome, self.version)
        judgments = [j for _, j in outcome.judgments]
        details: dict[str, Any] = {
            "consistent": outcome.consistent,
            "calls": len(judgments),
            "input_tokens": sum(j.tokens.input for j in judgments),
            "output_tokens": sum(j.tokens.output for j in judgments),
            "cost_usd": sum(j.cost_usd for j in judgments),
            "unpriced_calls": sum(j.unpriced_calls for j in judgments),
            "reason": " | ".join(j.reason for j in judgments if j.reason),
        }
        record = ReviewJudgmentRecord(
            queue_id=entry.queue_id,
            key=item.key,
            decision=decision,
            judged_at=datetime.now(UTC),
            details=details,
        )
        await self.writer.save_review_judgments([record])
        return RejudgeResult(decision, details["cost_usd"], details["unpriced_calls"])

    def count(self, progress: Progress, result: RejudgeResult) -> None:
        """A failed judge is an error, an unscored pair unscorable; the cost adds up."""
        progress.errors += result.error is not None
        progress.unscorable += result.decision is not None and result.decision.winner is None
        progress.cost_usd += result.cost_usd
        progress.unpriced_calls += result.unpriced_calls


async def rejudge(
    writer: StoreWriter,
    judge: PairwiseJudge,
    version: JudgeVersion,
    todo: Sequence[RejudgeItem],
    concurrency: int = 8,
    progress: ProgressCallback | None = None,
) -> Progress:
    """Judge every item of ``todo`` with ``judge`` (its version ``version``), at most ``concurrency`` at once."""
    plan = JobPlan(todo=list(todo), progress=Progress(total=len(todo)))
    return await run_job(RejudgeJob(judge, version, writer), plan, concurrency, progress)
