"""Concurrency caps, RPM spacing and retries of failures in the provider limits layer (429s and the learned
pace: test_limits_throttling.py)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.core.retry import RetryPolicy
from ragreplay.providers.limits import LimitedModel, RateLimiter
from ragreplay.providers.scripted import ScriptedChatModel

REQUEST = ChatRequest(messages=(ChatMessage(role="user", content="hi"),))


class FakeTime:
    """A clock whose sleep advances it instantly, recording every sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class CountingModel(ScriptedChatModel):
    """Answers "ok" after ``delay`` seconds, failing with the scripted errors first; stamps each call's start
    on ``clock`` (peak concurrency: ``peak_in_flight``)."""

    def __init__(
        self,
        errors: list[ProviderError] | None = None,
        delay: float = 0.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        pending = list(errors or [])
        self.started_at: list[float] = []

        async def respond(request: ChatRequest) -> str:
            if clock is not None:
                self.started_at.append(clock())
            await asyncio.sleep(delay)
            if pending:
                raise pending.pop(0)
            return "ok"

        super().__init__(respond, name="count:model")


def transient(status: int = 503, retry_after: float | None = None) -> ProviderError:
    return ProviderError(f"HTTP {status}", transient=True, status=status, retry_after=retry_after)


async def test_concurrency_never_exceeds_the_cap() -> None:
    inner = CountingModel(delay=0.005)
    limited = LimitedModel(inner, max_concurrency=3)
    await asyncio.gather(*(limited.complete(REQUEST) for _ in range(20)))
    assert inner.calls == 20
    assert inner.peak_in_flight == 3
    assert limited.gate.peak_in_flight == 3
    assert limited.gate.in_flight == 0


async def test_models_sharing_a_gate_share_the_cap() -> None:
    a, b = CountingModel(delay=0.005), CountingModel(delay=0.005)
    first = LimitedModel(a, max_concurrency=2)
    second = first.sharing(b)
    await asyncio.gather(*(m.complete(REQUEST) for m in [first, second] * 6))
    assert second.gate is first.gate
    assert first.gate.peak_in_flight == 2
    assert a.calls == b.calls == 6


async def test_rpm_spaces_calls_on_a_fake_clock() -> None:
    t = FakeTime()
    inner = CountingModel(clock=t.clock)
    limited = LimitedModel(inner, requests_per_minute=30, sleep=t.sleep, clock=t.clock)
    for _ in range(4):
        await limited.complete(REQUEST)
    assert inner.started_at == [0.0, 2.0, 4.0, 6.0]


async def test_5xx_are_retried_honouring_retry_after() -> None:
    t = FakeTime()
    inner = CountingModel(errors=[transient(503, retry_after=7.0), transient(503, retry_after=7.0)])
    limited = LimitedModel(inner, sleep=t.sleep, clock=t.clock, rng=random.Random(1))
    response = await limited.complete(REQUEST)
    assert response.text == "ok"
    assert inner.calls == 3
    assert limited.retries == 2
    assert t.sleeps == [7.0, 7.0]


async def test_backoff_without_retry_after_uses_full_jitter() -> None:
    t = FakeTime()
    inner = CountingModel(errors=[transient(), transient(), transient()])
    limited = LimitedModel(inner, sleep=t.sleep, clock=t.clock, rng=random.Random(3))
    await limited.complete(REQUEST)
    assert len(t.sleeps) == 3
    for attempt, slept in enumerate(t.sleeps):
        assert 0.0 <= slept <= 0.5 * 2**attempt


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=30.0)
    rng = random.Random(0)
    assert all(policy.delay(20, None, rng) <= 30.0 for _ in range(100))
    assert max(policy.delay(20, None, rng) for _ in range(200)) > 15.0


async def test_non_transient_errors_propagate_at_once() -> None:
    t = FakeTime()
    inner = CountingModel(errors=[ProviderError("HTTP 400", transient=False, status=400)])
    limited = LimitedModel(inner, sleep=t.sleep, clock=t.clock)
    with pytest.raises(ProviderError) as info:
        await limited.complete(REQUEST)
    assert info.value.status == 400
    assert inner.calls == 1
    assert t.sleeps == []


async def test_gives_up_after_max_retries() -> None:
    t = FakeTime()
    inner = CountingModel(errors=[transient(502)] * 10)
    limited = LimitedModel(inner, retry=RetryPolicy(max_retries=2), sleep=t.sleep, clock=t.clock)
    with pytest.raises(ProviderError) as info:
        await limited.complete(REQUEST)
    assert inner.calls == 3
    assert info.value.transient and info.value.status == 502
    assert "gave up after 2 retries" in str(info.value)


async def test_a_503_with_retry_after_does_not_pause_the_provider() -> None:
    t = FakeTime()
    failing = CountingModel(errors=[transient(503, retry_after=10.0)])
    limited = LimitedModel(failing, retry=RetryPolicy(max_retries=0), sleep=t.sleep, clock=t.clock)
    other_inner = CountingModel(clock=t.clock)
    other = LimitedModel(other_inner, sleep=t.sleep, clock=t.clock, gate=limited.gate)
    with pytest.raises(ProviderError):
        await limited.complete(REQUEST)
    await other.complete(REQUEST)
    assert other_inner.started_at == [0.0]


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        LimitedModel(CountingModel(), max_concurrency=0)
    with pytest.raises(ValueError):
        RateLimiter(0, clock=lambda: 0.0, sleep=asyncio.sleep)
