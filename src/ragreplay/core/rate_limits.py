"""What an endpoint says about its request rate limit, read from the ``x-ratelimit-*-requests`` headers.

OpenAI (and Azure, LiteLLM and other gateways) send, on every answer, ``x-ratelimit-limit-requests`` (the
bucket's size), ``x-ratelimit-remaining-requests`` (what is left of it) and ``x-ratelimit-reset-requests`` (how
long until it is full again, as a duration such as ``6m0s``, ``1.5s`` or ``20ms``). Pure: the caller passes the
headers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ragreplay.core.retry import header_number

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class RateLimitInfo:
    """The request limit as one answer reported it; any part may be unknown (``None``)."""

    limit: float | None = None
    remaining: float | None = None
    reset_s: float | None = None

    def refill_rate(self) -> float | None:
        """Requests a second the bucket refills at, ``(limit - remaining) / reset``, when all three are known
        and the bucket is not full. ``remaining`` is a whole number while the bucket is not, so this can
        overshoot by up to one request in ``reset``; callers take the least of several."""
        if self.limit is None or self.remaining is None or not self.reset_s:
            return None
        used = self.limit - self.remaining
        return used / self.reset_s if used > 0 else None


def parse_duration(raw: str | None) -> float | None:
    """Seconds in a duration as rate-limit headers write it: ``6m0s``, ``1h2m3.5s``, ``20ms`` or a bare number
    of seconds; ``None`` when unreadable, negative or not finite."""
    if raw is None:
        return None
    text = raw.strip().lower()
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        value = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return value if math.isfinite(value) and value >= 0 else None


def read_rate_limit(headers: Mapping[str, str]) -> RateLimitInfo | None:
    """The request limit the headers report (names in any case), or ``None`` when they report none of it."""
    lowered = {k.lower(): v for k, v in headers.items() if k[:12].lower() == "x-ratelimit-"}
    if not lowered:  # most endpoints send none: nothing to build
        return None
    info = RateLimitInfo(
        limit=header_number(lowered.get("x-ratelimit-limit-requests")),
        remaining=header_number(lowered.get("x-ratelimit-remaining-requests")),
        reset_s=parse_duration(lowered.get("x-ratelimit-reset-requests")),
    )
    return None if info == RateLimitInfo() else info
