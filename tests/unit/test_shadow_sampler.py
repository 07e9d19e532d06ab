"""Shadow sampling: windows (incl. midnight wrap and DST), per-user determinism, rates and counters."""

from __future__ import annotations

import math
from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest

from ragreplay.errors import ConfigError
from ragreplay.shadow.sampler import Sampler, SamplingConfig, Window, parse_window

AMS = ZoneInfo("Europe/Amsterdam")


def office_sampler(**kw: object) -> Sampler:
    windows = [Window(time(9), time(11), 0.05), Window(time(14), time(17), 0.5)]
    return Sampler(0.15, windows, tz="Europe/Amsterdam", **kw)  # type: ignore[arg-type]


def test_rate_follows_windows_in_local_time() -> None:
    s = office_sampler()
    assert s.rate_at(datetime(2026, 3, 2, 9, 0, tzinfo=AMS)) == 0.05
    assert s.rate_at(datetime(2026, 3, 2, 10, 59, tzinfo=AMS)) == 0.05
    assert s.rate_at(datetime(2026, 3, 2, 11, 0, tzinfo=AMS)) == 0.15  # end is exclusive
    assert s.rate_at(datetime(2026, 3, 2, 15, 30, tzinfo=AMS)) == 0.5
    assert s.rate_at(datetime(2026, 3, 2, 8, 59, tzinfo=AMS)) == 0.15
    # a naive datetime is wall-clock time in the configured zone
    assert s.rate_at(datetime(2026, 3, 2, 9, 30)) == 0.05


def test_windows_are_dst_aware() -> None:
    s = office_sampler()
    # 08:30 UTC is 09:30 in winter (CET, +1) but 10:30 in summer (CEST, +2): both in the morning window
    assert s.rate_at(datetime(2026, 1, 15, 8, 30, tzinfo=UTC)) == 0.05
    assert s.rate_at(datetime(2026, 7, 15, 8, 30, tzinfo=UTC)) == 0.05
    # 09:30 UTC is 10:30 in winter (in the window) but 11:30 in summer (out of it)
    assert s.rate_at(datetime(2026, 1, 15, 9, 30, tzinfo=UTC)) == 0.05
    assert s.rate_at(datetime(2026, 7, 15, 9, 30, tzinfo=UTC)) == 0.15
    # 07:30 UTC: 08:30 local in winter (base), 09:30 local in summer (window)
    assert s.rate_at(datetime(2026, 1, 15, 7, 30, tzinfo=UTC)) == 0.15
    assert s.rate_at(datetime(2026, 7, 15, 7, 30, tzinfo=UTC)) == 0.05
    # the day of the spring-forward switch (29 March 2026, 02:00 -> 03:00 local)
    assert s.rate_at(datetime(2026, 3, 29, 7, 30, tzinfo=UTC)) == 0.05


def test_window_wrapping_midnight_and_first_match_wins() -> None:
    night = Window(time(22), time(2), 0.9)
    assert night.contains(time(23, 59)) and night.contains(time(0)) and night.contains(time(1, 59))
    assert not night.contains(time(2)) and not night.contains(time(12)) and not night.contains(time(21, 59))
    s = Sampler(0.1, [night, Window(time(1), time(3), 0.3)])
    assert s.rate_at(datetime(2026, 5, 1, 1, 30, tzinfo=UTC)) == 0.9  # both match: the first wins
    assert s.rate_at(datetime(2026, 5, 1, 2, 30, tzinfo=UTC)) == 0.3
    assert parse_window("17:00-24:00", 0.2).contains(time(23, 30))


def test_per_user_is_deterministic_within_a_window() -> None:
    a, b = Sampler(0.5, per="user", seed=1), Sampler(0.5, per="user", seed=99)
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    users = [f"user-{i}" for i in range(200)]
    first = [a.decide(u, now) for u in users]
    assert first == [a.decide(u, now) for u in users]  # same sampler, asked again
    assert first == [b.decide(u, now) for u in users]  # a fresh sampler (other seed) agrees
    assert 0 < sum(first) < len(users)


def test_per_user_is_monotone_in_the_rate() -> None:
    s = office_sampler(per="user")
    morning, afternoon = datetime(2026, 5, 4, 10, tzinfo=AMS), datetime(2026, 5, 4, 15, tzinfo=AMS)
    for i in range(2000):
        if s.decide(f"u{i}", morning):
            assert s.decide(f"u{i}", afternoon)


@pytest.mark.parametrize("rate", [0.05, 0.15, 0.5])
def test_per_user_share_over_100k_users_is_within_binomial_tolerance(rate: float) -> None:
    s = Sampler(rate, per="user")
    n = 100_000
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    k = sum(s.decide(f"user-{i}", now) for i in range(n))
    sd = math.sqrt(n * rate * (1 - rate))
    assert abs(k - n * rate) < 5 * sd
    assert s.seen == n and s.sampled == k
    assert s.effective_rate == pytest.approx(k / n)


def test_different_salt_picks_different_users() -> None:
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    a, b = Sampler(0.5, per="user", salt="a"), Sampler(0.5, per="user", salt="b")
    users = [f"u{i}" for i in range(500)]
    assert [a.decide(u, now) for u in users] != [b.decide(u, now) for u in users]


def test_per_request_is_seeded_random_and_users_without_id_fall_back() -> None:
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    a, b = Sampler(0.3, seed=7), Sampler(0.3, seed=7)
    seq_a = [a.decide("same-user", now) for _ in range(5000)]
    assert seq_a == [b.decide("same-user", now) for _ in range(5000)]
    assert len(set(seq_a)) == 2  # per request: the same user is sometimes in, sometimes out
    assert abs(a.effective_rate - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 5000)
    per_user = Sampler(0.3, per="user", seed=7)
    anon = [per_user.decide(None, now) for _ in range(5000)]
    assert len(set(anon)) == 2


def test_effective_rate_and_extreme_rates() -> None:
    s = Sampler(0.0, [Window(time(9), time(10), 1.0)])
    assert s.effective_rate == 0.0
    assert s.decide(None, datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    assert not s.decide(None, datetime(2026, 5, 1, 10, 30, tzinfo=UTC))
    assert not s.decide("u1", datetime(2026, 5, 1, 11, tzinfo=UTC))
    assert (s.seen, s.sampled, s.effective_rate) == (3, 1, pytest.approx(1 / 3))
    assert s.stats()["sampled"] == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"base_rate": 1.5}, "base_rate"), ({"base_rate": 0.1, "tz": "Mars/Olympus"}, "Mars/Olympus")],
)
def test_sampler_rejects_bad_arguments(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        Sampler(**kwargs)  # type: ignore[arg-type]


def test_window_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match="09:00-09:00"):
        Window(time(9), time(9), 0.1)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        Window(time(9), time(10), -0.1)
    with pytest.raises(ConfigError, match="HH:MM-HH:MM"):
        parse_window("9am-11am", 0.1)


def test_config_builds_a_sampler() -> None:
    cfg = SamplingConfig.from_mapping(
        {"base_rate": 0.15, "windows": {"09:00-11:00": 0.05, "14:00-17:00": 0.5}, "tz": "Europe/Amsterdam"}
    )
    s = cfg.build(seed=3)
    assert [w.label for w in s.windows] == ["09:00-11:00", "14:00-17:00"]
    assert s.rate_at(datetime(2026, 7, 15, 13, 0, tzinfo=UTC)) == 0.5  # 15:00 CEST
    assert s.per == "request"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"base_rate": 2}, "base_rate"),
        ({"base_rate": 0.1, "windows": {"9-11": 0.1}}, "windows"),
        ({"base_rate": 0.1, "windows": {"09:00-11:00": 7}}, "windows"),
        ({"base_rate": 0.1, "tz": "Nowhere/City"}, "tz"),
        ({"base_rate": 0.1, "per": "session"}, "per"),
        ({"base_rate": 0.1, "rate": 0.2}, "rate"),
        ({}, "base_rate"),
    ],
)
def test_config_errors_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        SamplingConfig.from_mapping(data, source="ragreplay.yaml sampling")
    assert f"field '{field}'" in str(info.value)
    assert "ragreplay.yaml sampling" in str(info.value)
