"""Per-provider concurrency and rate limits, and retries of transient errors.

The pace is learned while the run goes (:mod:`ragreplay.providers.rate_learning`): from the configured
``requests_per_minute``, the endpoint's ``x-ratelimit-*`` headers and its 429s. A 429 is back-pressure, not a
failure: the request waits for the shared pause and the slower pace and goes again, without counting toward
``max_retries``; calls give up on 429s only once the endpoint has rejected everything for the policy's
``budget_s``. Failures (5xx, timeouts, dropped connections) are retried by the shared
:class:`~ragreplay.core.retry.RetryPolicy` (the server's Retry-After, capped, else full-jitter backoff).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.rate_limits import RateLimitInfo
from ragreplay.core.retry import RetryPolicy
from ragreplay.ports import ChatModel
from ragreplay.providers.rate_learning import RateLearner, Ticket

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class RateLimiter:
    """Lets requests through at the pace its :class:`RateLearner` allows, shared by one provider's calls.

    Waiters hold no reservation: each sleeps until the bucket would allow a request, then checks again, so a
    pause or a slower pace learned meanwhile applies at once and no slot is spent by a waiter that did not go.
    """

    def __init__(self, requests_per_minute: float | None, *, clock: Clock, sleep: Sleep) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self._clock = clock
        self._sleep = sleep
        self.learner = RateLearner(requests_per_minute / 60.0 if requests_per_minute else None)

    async def acquire(self, budget_s: float | None = None) -> Ticket | None:
        """Wait until a request may be sent; the ticket reports its outcome back. ``None`` when, meanwhile,
        the endpoint has rejected everything for ``budget_s``: the caller gives up rather than wait on."""
        while (wait := self.learner.wait(self._clock())) > 0:
            throttled_s = self.throttled_for()
            if budget_s is not None and throttled_s > 0:
                if throttled_s >= budget_s:
                    return None
                wait = min(wait, budget_s - throttled_s)
            await self._sleep(wait)
        return self.learner.take(self._clock())

    def succeeded(self, ticket: Ticket, info: RateLimitInfo | None) -> None:
        """The request was answered."""
        self.learner.succeeded(ticket, info, self._clock())

    def failed(self, ticket: Ticket, error: ProviderError, pause_s: float | None) -> None:
        """The request failed: a 429 pauses everyone for ``pause_s`` and slows the pace."""
        if error.status == 429:
            self.learner.throttled(ticket, pause_s, error.rate_limit, self._clock())
        else:
            self.learner.observed(ticket, error.rate_limit, self._clock())

    def throttled_for(self) -> float:
        """Seconds the endpoint has answered nothing but 429s."""
        return self.learner.throttled_for(self._clock())


class _NotSent(ProviderError):
    """A call given up before its request was sent: the retry budget was spent on 429s already."""


class ProviderGate:
    """Limits shared by one provider's calls: a concurrency semaphore, a rate limiter, in-flight counts."""

    def __init__(
        self,
        max_concurrency: int,
        limiter: RateLimiter,
        shared: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.semaphore = asyncio.Semaphore(max_concurrency)
        self.limiter = limiter
        self.shared = shared
        """Waits for a turn under a limit shared with other processes (``None``: this process alone)."""
        self.in_flight = 0
        self.peak_in_flight = 0


class LimitedModel:
    """Wraps a :class:`~ragreplay.ports.ChatModel` with a concurrency cap, a learned pace and retries.

    ``retries`` counts retried failures, ``throttled`` the 429s waited out.

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
        shared: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.inner = inner
        self.retry = retry or RetryPolicy()
        self.gate = gate or ProviderGate(
            max_concurrency, RateLimiter(requests_per_minute, clock=clock, sleep=sleep), shared
        )
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.retries = 0
        self.throttled = 0

    def sharing(self, inner: ChatModel) -> LimitedModel:
        """A wrapper around ``inner`` that shares this one's limits, retry policy and sleep."""
        return LimitedModel(inner, retry=self.retry, sleep=self._sleep, rng=self._rng, gate=self.gate)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Call the wrapped model within the limits, waiting out 429s and retrying failures.

        Once the endpoint has rejected everything for the policy's ``budget_s``, calls give up without a
        request: the run ends soon, its cases error rows that a re-run retries.
        """
        if self.retry.gives_up(0, self.gate.limiter.throttled_for()):
            raise self._not_sent()
        failures = 0
        while True:
            try:
                return await self._attempt(request)
            except _NotSent:
                raise
            except ProviderError as exc:
                if not exc.transient:
                    raise
                throttled = exc.status == 429
                failures += 0 if throttled else 1
                throttled_s = self.gate.limiter.throttled_for()
                if self.retry.gives_up(failures, throttled_s):
                    raise self._given_up(exc, failures - 1, throttled_s) from exc
                if throttled:
                    self.throttled += 1
                    continue  # the limiter holds the shared pause and the slower pace
                self.retries += 1
                # Sleep outside the semaphore so other calls can use the slot meanwhile.
                await self._sleep(self.retry.delay(failures - 1, exc.retry_after, self._rng))

    def _not_sent(self) -> ProviderError:
        throttled_s = self.gate.limiter.throttled_for()
        return _NotSent(
            f"{self.name}: not sent: every request rejected (429) for {throttled_s:.0f} s, the retry budget; "
            "a re-run of the same command retries this",
            transient=True,
            status=429,
        )

    def _given_up(self, exc: ProviderError, retries: int, throttled_s: float) -> ProviderError:
        if retries >= self.retry.max_retries:
            why = f"gave up after {retries} retries"
        else:
            why = (
                f"gave up: every request rejected (429) for {throttled_s:.0f} s, the retry budget; "
                "a re-run of the same command retries this"
            )
        return ProviderError(
            f"{exc} ({why})",
            transient=True,
            status=exc.status,
            retry_after=exc.retry_after,
            rate_limit=exc.rate_limit,
        )

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        gate = self.gate
        async with gate.semaphore:
            ticket = await gate.limiter.acquire(self.retry.budget_s)
            if ticket is None:
                raise self._not_sent()
            if gate.shared is not None:
                await gate.shared()
            gate.in_flight += 1
            gate.peak_in_flight = max(gate.peak_in_flight, gate.in_flight)
            try:
                response = await self.inner.complete(request)
            except ProviderError as exc:
                pause = None if exc.retry_after is None else min(exc.retry_after, self.retry.cap_s)
                gate.limiter.failed(ticket, exc, pause)
                raise
            finally:
                gate.in_flight -= 1
            gate.limiter.succeeded(ticket, response.rate_limit)
            return response

    async def aclose(self) -> None:
        """Close the wrapped model if it can be closed."""
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()
