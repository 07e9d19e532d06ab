"""Per-provider concurrency and rate limits, and retries of transient errors.

Retries follow the shared :class:`~ragreplay.core.retry.RetryPolicy` (the server's Retry-After, capped, else
full-jitter backoff). A 429 also pauses every call through the same limits for the whole Retry-After, since a
rate limit applies to the whole key, not to one request.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.retry import RetryPolicy
from ragreplay.ports import ChatModel

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class RateLimiter:
    """Spaces calls at least ``60 / requests_per_minute`` seconds apart and honours provider-wide pauses.

    Each caller reserves the next free slot synchronously, then sleeps until it; so the limiter needs no lock
    and concurrent callers get distinct slots.
    """

    def __init__(self, requests_per_minute: float | None, *, clock: Clock, sleep: Sleep) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next_slot = float("-inf")
        self._paused_until = float("-inf")

    def pause(self, seconds: float) -> None:
        """Let no call start for ``seconds`` from now (after a 429 with Retry-After)."""
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    async def acquire(self) -> None:
        """Wait for this caller's slot."""
        while True:
            now = self._clock()
            slot = max(now, self._next_slot, self._paused_until)
            if self.interval:
                self._next_slot = slot + self.interval
            if slot <= now:
                return
            await self._sleep(slot - now)
            # A pause set while we slept moves the start again; the slot we reserved stays used.
            if self._paused_until <= self._clock():
                return


class ProviderGate:
    """Limits shared by one provider's calls: a concurrency semaphore, a rate limiter, in-flight counts."""

    def __init__(self, max_concurrency: int, limiter: RateLimiter) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.semaphore = asyncio.Semaphore(max_concurrency)
        self.limiter = limiter
        self.in_flight = 0
        self.peak_in_flight = 0


class LimitedModel:
    """Wraps a :class:`~ragreplay.ports.ChatModel` with a concurrency cap, an RPM limit and retries.

    :meth:`sharing` makes another wrapper (for another model of the same provider) that shares these limits.
    ``sleep``, ``clock`` and ``rng`` are injectable so tests run instantly and deterministically.
    """

    def __init__(
        self,
        inner: ChatModel,
        max_concurrency: int = 8,
        requests_per_minute: float | None = None,
        retry: RetryPolicy | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
        gate: ProviderGate | None = None,
    ) -> None:
        self.inner = inner
        self.retry = retry or RetryPolicy()
        self.gate = gate or ProviderGate(
            max_concurrency, RateLimiter(requests_per_minute, clock=clock, sleep=sleep)
        )
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.retries = 0

    def sharing(self, inner: ChatModel) -> LimitedModel:
        """A wrapper around ``inner`` that shares this one's limits, retry policy and sleep."""
        return LimitedModel(inner, retry=self.retry, sleep=self._sleep, rng=self._rng, gate=self.gate)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Call the wrapped model within the limits, retrying transient errors."""
        attempt = 0
        while True:
            try:
                return await self._attempt(request)
            except ProviderError as exc:
                if not exc.transient:
                    raise
                if exc.status == 429 and exc.retry_after is not None:
                    self.gate.limiter.pause(exc.retry_after)
                if attempt >= self.retry.max_retries:
                    raise ProviderError(
                        f"{exc} (gave up after {attempt} retries)",
                        transient=True,
                        status=exc.status,
                        retry_after=exc.retry_after,
                    ) from exc
                delay = self.retry.delay(attempt, exc.retry_after, self._rng)
                attempt += 1
                self.retries += 1
                # Sleep outside the semaphore so other calls can use the slot meanwhile.
                await self._sleep(delay)

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        gate = self.gate
        async with gate.semaphore:
            await gate.limiter.acquire()
            gate.in_flight += 1
            gate.peak_in_flight = max(gate.peak_in_flight, gate.in_flight)
            try:
                return await self.inner.complete(request)
            finally:
                gate.in_flight -= 1

    async def aclose(self) -> None:
        """Close the wrapped model if it can be closed."""
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()
