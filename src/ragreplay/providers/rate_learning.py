"""Learning an endpoint's request limit while using it: a client-side copy of the endpoint's token bucket.

The pace is the least of three rates, each optional: the configured ``requests_per_minute``, the refill rate the
endpoint reports in its ``x-ratelimit-*-requests`` headers, and a rate learned from 429s by AIMD. Each 429 of a
request sent since the last cut multiplies that rate by :data:`DECREASE`; each success adds :data:`GROWTH`
(about 3% a second), or :data:`FAST_GROWTH` until the first cut of a learned pace, like TCP's slow start. AIMD
covers endpoints that send no headers or limit something the headers do not describe (tokens).

Requests are spaced by a token bucket refilled at that pace; every answer that reports ``remaining`` resets the
bucket to what the endpoint has left (less the requests sent since), so a run spends the endpoint's burst and
then follows its refill, without waiting for 429s to say it went too fast. A 429's ``Retry-After`` is a pause
shared by every caller and taken once (the limit belongs to the key, not to one request).

Pure: every event passes the current time; :class:`~ragreplay.providers.limits.RateLimiter` does the waiting.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from ragreplay.core.rate_limits import RateLimitInfo

MIN_RATE = 0.05
"""Requests a second: however many 429s, the pace never falls below one request every 20 s."""
FIRST_DECREASE = 0.5
"""On the first 429 with no rate known yet: half the rate requests were being sent at."""
DECREASE = 0.8
"""On a later 429: the pace times this."""
GROWTH = 0.03
"""Requests a second added per success: about 3% of the pace per second of successes."""
FAST_GROWTH = 0.7
"""The same until the learned pace is first cut: it doubles about every second, so a first guess made from a
few requests (often far too low) is soon corrected."""
QUANTUM_S = 1.0
"""Spend at most this many seconds' worth of the endpoint's burst at once (limits are often enforced per
second even when announced per minute)."""
CLIENT_BURST = 2.0
"""Tokens the client's own bucket holds when the endpoint reports none: enough to absorb late wake-ups."""
RATE_SAMPLES = 16
FIRST_SAMPLE = 4
"""Requests sent in the last second needed before a first 429 sets a pace from them (fewer say too little)."""
_EPSILON = 1e-9  # float noise: a wait this short is no wait (and would not move a clock)


@dataclass(frozen=True)
class Ticket:
    """One request let through: its place among all requests sent, and when it was sent."""

    seq: int
    sent_at: float


class RateLearner:
    """What is known of one endpoint's request limit; ``ceiling`` is the configured rate (requests a second)."""

    def __init__(self, ceiling: float | None) -> None:
        self.ceiling = ceiling
        self.header_rate: float | None = None
        self.aimd_rate: float | None = None
        self.tokens = 1.0
        self.capacity = CLIENT_BURST
        self.not_before = -math.inf
        self.throttled_since: float | None = None
        self._samples: deque[float] = deque(maxlen=RATE_SAMPLES)
        self._at: float | None = None  # the clock starts with the first event
        self._sent = 0
        self._recent: deque[float] = deque()
        self._last_cut = -math.inf
        self._growth = FAST_GROWTH

    @property
    def rate(self) -> float | None:
        """The pace in requests a second, ``None`` while nothing limits it."""
        rate = self.ceiling  # the least of the three that are known (asked several times a request)
        header, aimd = self.header_rate, self.aimd_rate
        if header is not None and (rate is None or header < rate):
            rate = header
        if aimd is not None and (rate is None or aimd < rate):
            rate = aimd
        return rate

    def throttled_for(self, now: float) -> float:
        """Seconds since the first 429 after the last success (0 when the last answer was not a 429)."""
        return 0.0 if self.throttled_since is None else now - self.throttled_since

    def wait(self, now: float) -> float:
        """Seconds until a request may be sent."""
        self._refill(now)
        wait = self.not_before - now
        rate = self.rate
        if rate is not None and self.tokens < 1.0 - _EPSILON:
            wait = max(wait, (1.0 - self.tokens) / rate)
        return wait if wait > _EPSILON else 0.0

    def take(self, now: float) -> Ticket:
        """Count a request sent now (call once :meth:`wait` is 0)."""
        self._refill(now)
        if self.rate is not None:
            self.tokens -= 1.0
        ticket = Ticket(self._sent, now)
        self._sent += 1
        self._recent.append(now)
        while self._recent[0] < now - QUANTUM_S:
            self._recent.popleft()
        return ticket

    def succeeded(self, ticket: Ticket, info: RateLimitInfo | None, now: float) -> None:
        """An answer: the pace may grow, and the endpoint's headers (if any) resync the bucket."""
        self._refill(now)
        self.throttled_since = None
        if self.aimd_rate is not None:
            self.aimd_rate += self._growth
        self.observed(ticket, info, now)

    def throttled(
        self, ticket: Ticket, retry_after: float | None, info: RateLimitInfo | None, now: float
    ) -> None:
        """A 429: pause everyone for ``retry_after``, cut the pace once per round of requests, empty the bucket."""
        self._refill(now)
        if self.throttled_since is None:
            self.throttled_since = now
        if retry_after is not None:
            self.not_before = max(self.not_before, now + retry_after)
        rate = self.rate
        if ticket.sent_at > self._last_cut and (rate is not None or len(self._recent) >= FIRST_SAMPLE):
            # requests sent before the last cut saw the old pace: one cut per round
            cut = rate * DECREASE if rate is not None else len(self._recent) / QUANTUM_S * FIRST_DECREASE
            if self.aimd_rate is not None:
                self._growth = GROWTH
            self.aimd_rate = max(MIN_RATE, cut)
            self._last_cut = now
        self.observed(ticket, info, now)
        self.tokens = min(self.tokens, 0.0)

    def observed(self, ticket: Ticket, info: RateLimitInfo | None, now: float) -> None:
        """What an answer (any status) said of the limit: a refill-rate sample, and what is left now."""
        if info is None:
            return
        self._refill(now)
        sample = info.refill_rate()
        if sample is not None:
            self._samples.append(sample)
            self.header_rate = min(self._samples)  # each sample can only overshoot (see refill_rate)
        rate = self.rate
        if info.remaining is None or rate is None:
            return
        limit = info.limit if info.limit is not None else math.inf
        self.capacity = max(CLIENT_BURST, min(limit, rate * QUANTUM_S))
        sent_since = self._sent - ticket.seq - 1
        left = min(limit, info.remaining + rate * (now - ticket.sent_at)) - sent_since
        self.tokens = min(self.capacity, left)

    def _refill(self, now: float) -> None:
        rate = self.rate
        if rate is not None and self._at is not None:
            self.tokens = min(self.capacity, self.tokens + rate * max(0.0, now - self._at))
        self._at = now
