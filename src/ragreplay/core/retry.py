"""The one retry policy: how long to wait before retrying a transient failure (a 429, a 5xx, a dropped
connection), and when to give up; shared by model calls, HTTP targets and the shadow's challenger calls.

The wait is the server's when it said one (``retry-after-ms`` or ``Retry-After``), capped; otherwise full
jitter: uniform in ``[0, min(cap, base * 2**attempt)]``, which spreads concurrent retries apart. A 429 is
back-pressure, not a failure: it does not count toward ``max_retries``; a caller stops waiting on 429s only
once the endpoint has rejected everything for ``budget_s``. Pure: the caller passes the random generator and
the current time, and does the sleeping.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class RetryPolicy:
    """Up to ``max_retries`` retries of failures after the first attempt, waiting :meth:`delay` before each;
    429s waited out for as long as the endpoint answers anything within ``budget_s`` (``None``: forever)."""

    max_retries: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0
    budget_s: float | None = 300.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_s < 0 or self.cap_s < 0:
            raise ValueError(f"retry policy values must be >= 0, got {self}")
        if self.budget_s is not None and not self.budget_s > 0:
            raise ValueError(f"budget_s must be > 0 or None, got {self}")

    def gives_up(self, failures: int, throttled_s: float) -> bool:
        """Whether to stop after ``failures`` failed attempts (429s not counted) and with the endpoint
        rejecting every request (429) for the last ``throttled_s`` seconds (0 when it is not)."""
        over_budget = self.budget_s is not None and throttled_s >= self.budget_s
        return failures > self.max_retries or over_budget

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0): the server's
        ``retry_after`` capped at ``cap_s`` when it gave one, else full jitter, uniform in
        ``[0, min(cap_s, base_s * 2**attempt)]``."""
        if retry_after is not None:
            return min(max(0.0, retry_after), self.cap_s)
        return rng.uniform(0.0, min(self.cap_s, self.base_s * 2.0 ** min(attempt, 64)))


def retry_after_seconds(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``Retry-After`` as seconds or as an HTTP
    date (a past date is 0); ``None`` when neither is there or readable. Header names in any case; junk,
    negative and non-finite values are ignored."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = header_number(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = header_number(raw)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def header_number(raw: str | None) -> float | None:
    """A header's value as a finite, non-negative number, or ``None`` (absent, not a number, negative)."""
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
