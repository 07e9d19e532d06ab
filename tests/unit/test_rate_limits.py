"""Reading an endpoint's x-ratelimit-*-requests headers (OpenAI's names and duration format)."""

from __future__ import annotations

import pytest

from ragreplay.core.rate_limits import RateLimitInfo, parse_duration, read_rate_limit


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("6m0s", 360.0),
        ("1h2m3.5s", 3723.5),
        ("20ms", 0.02),
        ("1.5s", 1.5),
        ("0s", 0.0),
        ("2", 2.0),
        (" 7s ", 7.0),
    ],
)
def test_durations_as_openai_writes_them(raw: str, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("junk", [None, "", "soon", "5x", "-3s", "1s junk", "inf", "nan"])
def test_unreadable_durations_are_none(junk: str | None) -> None:
    assert parse_duration(junk) is None


def test_the_request_headers_are_read_in_any_case() -> None:
    headers = {
        "X-RateLimit-Limit-Requests": "60",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "149984",  # a token limit: not the request limit
    }
    assert read_rate_limit(headers) == RateLimitInfo(limit=60, remaining=59, reset_s=1.0)
    assert read_rate_limit({"x-ratelimit-remaining-requests": "3"}) == RateLimitInfo(remaining=3)
    assert read_rate_limit({"content-type": "application/json"}) is None
    assert read_rate_limit({"x-ratelimit-remaining-requests": "lots"}) is None


def test_refill_rate_from_one_answer() -> None:
    assert RateLimitInfo(limit=10000, remaining=9999, reset_s=0.006).refill_rate() == pytest.approx(
        166.67, 0.01
    )
    assert RateLimitInfo(limit=20, remaining=0, reset_s=1.0).refill_rate() == 20.0
    assert RateLimitInfo(limit=20, remaining=20, reset_s=0.0).refill_rate() is None  # full: says nothing
    assert RateLimitInfo(remaining=3, reset_s=1.0).refill_rate() is None
