"""The one retry policy: full-jitter backoff, the server's wait when it gave one, and reading that wait."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from ragreplay.core.retry import RetryPolicy, retry_after_seconds

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_full_jitter_stays_within_a_doubling_capped_ceiling() -> None:
    policy = RetryPolicy(max_retries=10, base_s=0.5, cap_s=30.0)
    rng = random.Random(42)
    for attempt, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]):
        draws = [policy.delay(attempt, None, rng) for _ in range(2000)]
        assert all(0.0 <= d <= ceiling for d in draws)
        # full jitter: the draws fill the range, not only its top (10% jitter) or its bottom
        assert min(draws) < 0.05 * ceiling and max(draws) > 0.95 * ceiling
        assert sum(draws) / len(draws) == pytest.approx(ceiling / 2, rel=0.1)


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    policy = RetryPolicy()
    first = [policy.delay(a, None, random.Random(7)) for a in range(5)]
    assert first == [policy.delay(a, None, random.Random(7)) for a in range(5)]


def test_a_huge_attempt_number_stays_at_the_cap() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=3.0)
    rng = random.Random(0)
    assert all(0.0 <= policy.delay(5000, None, rng) <= 3.0 for _ in range(100))


def test_the_servers_wait_wins_and_is_capped() -> None:
    policy = RetryPolicy(base_s=5.0, cap_s=30.0)
    rng = random.Random(0)
    assert policy.delay(0, 0.0, rng) == 0.0  # "retry now" beats a 5 s backoff
    assert policy.delay(3, 7.5, rng) == 7.5
    assert policy.delay(0, 86_400.0, rng) == 30.0  # a day-long Retry-After is capped


def test_negative_values_are_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(base_s=-0.1)


def test_retry_after_as_seconds() -> None:
    assert retry_after_seconds({"Retry-After": "7"}, NOW) == 7.0
    assert retry_after_seconds({"retry-after": " 1.5 "}, NOW) == 1.5
    assert retry_after_seconds({"RETRY-AFTER": "0"}, NOW) == 0.0


def test_retry_after_ms_comes_first() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "1"}, NOW) == 0.25
    assert retry_after_seconds({"Retry-After-Ms": "1500"}, NOW) == 1.5
    # unreadable milliseconds fall back to Retry-After
    assert retry_after_seconds({"retry-after-ms": "soon", "Retry-After": "2"}, NOW) == 2.0
    assert retry_after_seconds({"retry-after-ms": "-5", "Retry-After": "2"}, NOW) == 2.0


def test_retry_after_as_an_http_date() -> None:
    date = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, NOW) == pytest.approx(30.0)
    past = format_datetime(NOW - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"Retry-After": past}, NOW) == 0.0
    assert retry_after_seconds({"Retry-After": "Thu, 01 Jan 2026 12:01:00 GMT"}, NOW) == pytest.approx(60.0)


@pytest.mark.parametrize("junk", ["soon", "", "-3", "nan", "inf", "Thu, 99 Foo 2026 25:61:00 GMT", "1e400"])
def test_junk_and_negative_retry_after_are_ignored(junk: str) -> None:
    assert retry_after_seconds({"Retry-After": junk}, NOW) is None


def test_no_retry_after_header() -> None:
    assert retry_after_seconds({}, NOW) is None
    assert retry_after_seconds({"content-type": "application/json"}, NOW) is None


def test_failures_are_counted_and_429s_are_bounded_by_the_budget() -> None:
    policy = RetryPolicy(max_retries=2, budget_s=60.0)
    assert not policy.gives_up(failures=2, throttled_s=0.0)
    assert policy.gives_up(failures=3, throttled_s=0.0)
    assert not policy.gives_up(failures=0, throttled_s=59.9)  # rate limited a minute: still waiting
    assert policy.gives_up(failures=0, throttled_s=60.0)
    assert not RetryPolicy(budget_s=None).gives_up(failures=0, throttled_s=1e9)
    with pytest.raises(ValueError):
        RetryPolicy(budget_s=0)
