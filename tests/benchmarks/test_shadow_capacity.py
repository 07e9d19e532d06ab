"""The queueing model behind the proxy's capacity figures (benchmarks/shadow_capacity.py)."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cap() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("shadow_capacity")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def erlang_c_by_sums(c: int, a: float) -> float:
    """The textbook formula, term by term."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_erlang_c_known_values(cap: ModuleType) -> None:
    assert cap.erlang_c(2, 1.0) == pytest.approx(1 / 3)  # two servers half busy: a third of arrivals wait
    assert cap.erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: the chance of waiting is the utilisation
    for c, a in [(10, 8.0), (4, 3.2), (16, 15.0), (3, 0.2)]:
        assert cap.erlang_c(c, a) == pytest.approx(erlang_c_by_sums(c, a), rel=1e-12)
    assert cap.erlang_c(2, 2.0) == 1.0  # unstable


def test_wait_quantile_of_mm1_and_the_added_p99(cap: ModuleType) -> None:
    # M/M/1, lam = 800/s, mean service 1 ms: P(W > t) = 0.8 exp(-200 t), so the p99 wait is ln(80) / 200
    assert cap.wait_quantile_s(1, 800, 0.001) == pytest.approx(math.log(80) / 200)
    assert cap.wait_quantile_s(1, 5, 0.001) == 0.0  # 0.5% wait at all: the p99 does not wait
    assert math.isinf(cap.wait_quantile_s(1, 1000, 0.001))
    assert cap.added_p99_ms(1.0, 800, 1) == pytest.approx(math.log(80) / 200 * 1000 + 1.0)
    # pinned: 2 workers with half the traffic each are two of those M/M/1 queues
    assert cap.added_p99_ms(1.0, 1600, 2, pinned=True) == pytest.approx(cap.added_p99_ms(1.0, 800, 1))
    # pooling never waits longer than pinning
    assert cap.added_p99_ms(1.0, 1600, 2) < cap.added_p99_ms(1.0, 1600, 2, pinned=True)


def test_workers_needed_and_one_core(cap: ModuleType) -> None:
    assert cap.one_core_sustains(0.5) == pytest.approx(1000)  # 50% of a core at 0.5 ms each
    n = cap.workers_needed(0.75, 2700, 5.0)
    assert n is not None and cap.added_p99_ms(0.75, 2700, n) < 5.0 <= cap.added_p99_ms(0.75, 2700, n - 1)
    pinned = cap.workers_needed(0.75, 2700, 5.0, pinned=True)
    assert pinned is not None and pinned >= n
    assert cap.workers_needed(6.0, 100, 5.0) is None  # a request's own CPU over the target: no count helps
    table = cap.model(0.75, 2700, [1, 4])
    assert table["by_workers"][0]["added_p99_ms_pooled"] is None  # 2.0 cores of work on one: unstable
    assert table["workers_needed_pooled"] == n
    assert table["by_workers"][1]["added_max_ms_closed_loop_16"] == pytest.approx(3.0)  # 4 per worker


def test_closed_loop_bound(cap: ModuleType) -> None:
    assert cap.closed_loop_bound_ms(0.75, 16, 1) == pytest.approx(12.0)  # behind all 15 others
    assert cap.closed_loop_bound_ms(0.75, 16, 3) == pytest.approx(4.5)  # 6, 5 and 5 connections
    assert cap.closed_loop_bound_ms(0.75, 16, 16) == pytest.approx(0.75)


def test_closed_loop_simulation(cap: ModuleType) -> None:
    # a worker per client and no shadow work: nobody waits, the added p99 is the on-path cost's own p99
    # (exponential with mean 0.1 ms: ln(100) * 0.1 = 0.46 ms)
    p99, _ = cap.simulate_closed_loop(0.1, 0.0, 16)
    assert p99 == pytest.approx(0.1 * math.log(100), rel=0.1)
    # one worker with 2 ms of work per request saturates at 500 requests/s, whatever the clients
    _, carried = cap.simulate_closed_loop(1.0, 1.0, 1)
    assert carried == pytest.approx(500, rel=0.05)
    # more workers, less added latency
    p99s = [cap.simulate_closed_loop(0.35, 0.4, n, requests=10_000)[0] for n in (1, 2, 4)]
    assert p99s[0] > p99s[1] > p99s[2]
    table = cap.model(0.75, 2700, [3], on_path_ms=0.35)
    assert table["by_workers"][0]["added_p99_ms_simulated_16"] < 5.0
