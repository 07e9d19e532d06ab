"""429s as back-pressure: the learned pace (AIMD, x-ratelimit headers), the shared Retry-After pause and the
retry budget, against a token-bucket endpoint on virtual time (tests/virtual_time.py): exact and instant."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ChatResponse, ProviderError
from ragreplay.core.rate_limits import RateLimitInfo
from ragreplay.core.retry import RetryPolicy
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.rate_learning import (
    DECREASE,
    FAST_GROWTH,
    FIRST_DECREASE,
    GROWTH,
    RateLearner,
    Ticket,
)
from ragreplay.providers.scripted import ScriptedChatModel
from virtual_time import clock, run_virtual

REQUEST = ChatRequest(messages=(ChatMessage(role="user", content="hi"),))


# A class, not a ScriptedChatModel: it models the endpoint's token bucket over virtual time (refill, headers).
class BucketEndpoint:
    """A chat endpoint limited like OpenAI's: a token bucket of ``capacity`` refilled at ``rate`` a second.

    Over the limit it answers 429 with the exact wait as ``retry_after``; ``headers`` adds the
    ``x-ratelimit-*-requests`` values to every answer; ``error_rate`` answers that share of admitted requests
    with a 500 (seeded).
    """

    name = "fake:bucket"

    def __init__(
        self,
        rate: float,
        capacity: float,
        *,
        latency: float = 0.1,
        headers: bool = True,
        error_rate: float = 0.0,
    ) -> None:
        self.rate, self.capacity, self.latency = rate, capacity, latency
        self.headers, self.error_rate = headers, error_rate
        self.tokens, self.at = capacity, 0.0
        self.rejected = self.answered = self.errors = 0
        self.rng = random.Random(5)

    def _info(self) -> RateLimitInfo | None:
        if not self.headers:
            return None
        reset = (self.capacity - self.tokens) / self.rate
        return RateLimitInfo(self.capacity, math.floor(self.tokens), math.ceil(reset * 1000) / 1000)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        now = clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1.0:
            self.rejected += 1
            wait = (1.0 - self.tokens) / self.rate
            raise ProviderError(
                "HTTP 429", transient=True, status=429, retry_after=wait, rate_limit=self._info()
            )
        self.tokens -= 1.0
        info = self._info()
        await asyncio.sleep(self.latency)
        if self.rng.random() < self.error_rate:
            self.errors += 1
            raise ProviderError("HTTP 500", transient=True, status=500, rate_limit=info)
        self.answered += 1
        return ChatResponse(text="ok", model="m", rate_limit=info)


async def replay_calls(model: LimitedModel, calls: int, workers: int = 16) -> int:
    """``calls`` requests from ``workers`` concurrent callers (as the job runner's pool does); the failures."""
    left = iter(range(calls))
    failed = 0

    async def worker() -> None:
        nonlocal failed
        for _ in left:
            try:
                await model.complete(REQUEST)
            except ProviderError:
                failed += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return failed


def limited(endpoint: BucketEndpoint, rpm: float | None = None, **policy: float) -> LimitedModel:
    return LimitedModel(
        endpoint,
        max_concurrency=8,
        requests_per_minute=rpm,
        retry=RetryPolicy(**policy),  # type: ignore[arg-type]
        sleep=asyncio.sleep,
        clock=clock,
        rng=random.Random(2),
    )


@pytest.mark.parametrize("headers", [True, False], ids=["x-ratelimit headers", "429s only"])
def test_no_call_fails_while_the_endpoint_merely_rate_limits(headers: bool) -> None:
    endpoint = BucketEndpoint(rate=20, capacity=20, headers=headers, error_rate=0.05)

    async def run() -> int:
        return await replay_calls(limited(endpoint), 600)

    failed, elapsed = run_virtual(run())
    floor = 600 / 20
    assert failed == 0 and endpoint.answered == 600
    assert endpoint.rejected <= 0.10 * 600  # 30+ with a fixed pace that ignores them
    assert elapsed <= 1.15 * floor


def test_x_ratelimit_headers_set_the_pace_without_waiting_for_429s() -> None:
    endpoint = BucketEndpoint(rate=20, capacity=5)
    model = limited(endpoint)
    failed, elapsed = run_virtual(replay_calls(model, 200))
    # only the first round, sent before any answer said anything, can overflow the bucket of 5
    assert failed == 0 and endpoint.rejected <= 8 - 5
    assert model.gate.limiter.learner.header_rate == pytest.approx(20, rel=0.05)
    assert elapsed <= 1.05 * (200 - 5) / 20 + 0.2


def test_requests_per_minute_at_the_limit_reaches_the_floor() -> None:
    endpoint = BucketEndpoint(rate=20, capacity=20, headers=False, error_rate=0.05)
    failed, elapsed = run_virtual(replay_calls(limited(endpoint, rpm=1200), 400))
    assert failed == 0 and endpoint.rejected <= 4
    assert elapsed <= 1.10 * 400 / 20


def test_a_429_is_back_pressure_not_a_counted_retry() -> None:
    endpoint = BucketEndpoint(rate=1, capacity=1, headers=False)
    model = limited(endpoint, max_retries=0)

    async def run() -> list[str]:
        return [(await model.complete(REQUEST)).text for _ in range(4)]

    texts, _ = run_virtual(run())
    assert texts == ["ok"] * 4
    assert model.retries == 0 and model.throttled == endpoint.rejected > 0


def test_a_hard_error_gives_up_at_once() -> None:
    inner = ScriptedChatModel([ProviderError("HTTP 401", transient=False, status=401)], name="fake:401")
    model = LimitedModel(inner, sleep=asyncio.sleep, clock=clock)

    async def run() -> None:
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
        assert info.value.status == 401

    _, elapsed = run_virtual(run())
    assert inner.calls == 1 and elapsed == 0.0


def test_rate_limiting_beyond_the_budget_gives_up_and_later_calls_at_once() -> None:
    endpoint = BucketEndpoint(rate=1e-9, capacity=1e-9, headers=False)  # rejects everything
    model = limited(endpoint, budget_s=60.0)

    async def run() -> tuple[float, float, int]:
        with pytest.raises(ProviderError) as first:
            await model.complete(REQUEST)
        assert first.value.status == 429 and "retry budget" in str(first.value)
        gave_up_at, rejected = clock(), endpoint.rejected
        with pytest.raises(ProviderError) as second:
            await model.complete(REQUEST)
        assert "not sent" in str(second.value) and "re-run" in str(second.value)
        return gave_up_at, clock() - gave_up_at, endpoint.rejected - rejected

    (gave_up_at, second_took, second_sent), _ = run_virtual(run())
    assert gave_up_at == pytest.approx(60.0)  # the budget, not a wait past it
    assert second_took == 0.0 and second_sent == 0  # the endpoint rejected everything for 60 s already


def test_a_success_ends_the_rejection_streak() -> None:
    learner = RateLearner(None)
    learner.throttled(learner.take(0.0), None, None, 0.0)
    assert learner.throttled_for(50.0) == 50.0
    learner.succeeded(learner.take(60.0), None, 61.0)
    assert learner.throttled_for(100.0) == 0.0


def test_aimd_cuts_the_pace_on_a_429_and_raises_it_on_success() -> None:
    learner = RateLearner(None)
    assert learner.rate is None  # nothing limits the pace before the first 429
    tickets = [learner.take(i / 40) for i in range(40)]  # 40 requests in the last second
    learner.throttled(tickets[-1], None, None, 1.0)
    assert learner.rate == pytest.approx(40 * FIRST_DECREASE)
    learner.succeeded(learner.take(1.5), None, 1.6)
    guess = 40 * FIRST_DECREASE + FAST_GROWTH  # until the learned pace is first cut, it grows fast
    assert learner.rate == pytest.approx(guess)
    learner.throttled(learner.take(2.0), None, None, 2.1)
    assert learner.rate == pytest.approx(guess * DECREASE)
    learner.succeeded(learner.take(3.0), None, 3.1)
    assert learner.rate == pytest.approx(guess * DECREASE + GROWTH)


def test_one_cut_per_round_of_requests() -> None:
    learner = RateLearner(10.0)
    early = [learner.take(0.0), Ticket(1, 0.0)]
    learner.throttled(early[0], None, None, 0.2)
    learner.throttled(early[1], None, None, 0.21)  # sent before the cut: it saw the old pace
    assert learner.rate == pytest.approx(10.0 * DECREASE)


def test_retry_after_is_one_shared_pause_taken_once() -> None:
    """A 429 limits the whole key, so its Retry-After holds back every caller: once, from when it came, not
    once per rejected request and not on top of the rejected request's own wait."""

    started: list[float] = []

    async def rejects_first_four(request: ChatRequest) -> str:
        started.append(clock())
        await asyncio.sleep(0.01)
        if len(started) <= 4:
            raise ProviderError("HTTP 429", transient=True, status=429, retry_after=1.0)
        return "ok"

    inner = ScriptedChatModel(rejects_first_four, name="fake:429")
    model = LimitedModel(inner, max_concurrency=8, sleep=asyncio.sleep, clock=clock)

    async def run() -> None:
        await asyncio.gather(*(model.complete(REQUEST) for _ in range(4)))

    _, elapsed = run_virtual(run())
    retries = started[4:]
    assert len(retries) == 4 and retries[0] == pytest.approx(1.01)  # not 2.01 (pause, then its own sleep)
    assert elapsed < 4.0  # not a second per rejected request in a row


def test_headers_resync_the_bucket_with_what_the_endpoint_has_left() -> None:
    learner = RateLearner(None)
    first = learner.take(0.0)
    for t in (0.01, 0.02):
        learner.take(t)
    # answered at 0.1: 20 a second, 3 left when the first request was admitted, 2 sent since
    learner.succeeded(first, RateLimitInfo(limit=20, remaining=3, reset_s=0.85), 0.1)
    assert learner.rate == pytest.approx(20)
    assert learner.tokens == pytest.approx(3 + 20 * 0.1 - 2)
    assert learner.wait(0.1) == 0.0
    learner.take(0.1), learner.take(0.1), learner.take(0.1)
    assert learner.wait(0.1) == pytest.approx(0.05)
