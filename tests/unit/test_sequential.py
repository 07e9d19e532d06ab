"""The gate's sequential looks: the error rate stays at the stated level by simulation; naive re-looking does not."""

from __future__ import annotations

import math

import pytest

from ragreplay.core.sequential import SequentialPlan, decide_share, run_plan, simulate


class NaivePlan(SequentialPlan):
    """Re-look with a plain 95% interval each time: what the plan must not do."""

    @property
    def look_confidence(self) -> float:
        return self.confidence


ONE_SIDED = 0.025  # a 95% two-sided interval wrongly clears a threshold on one side at most 2.5% of the time
TRIALS = 10000


def bound(rate: float, trials: int) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


def test_at_the_threshold_the_plan_keeps_its_level_and_naive_looks_do_not() -> None:
    plan = SequentialPlan(max_looks=4, first=60, step=20)
    assert plan.look_confidence == pytest.approx(1 - 0.05 / 4)
    at_threshold = simulate(plan, p=0.55, threshold=0.55, trials=TRIALS, seed=1)
    naive = simulate(NaivePlan(max_looks=4, first=60, step=20), p=0.55, threshold=0.55, trials=TRIALS, seed=1)
    assert at_threshold.error_rate <= ONE_SIDED  # measured: about 0.017
    assert naive.error_rate > ONE_SIDED  # measured: about 0.04, over the level


@pytest.mark.parametrize("p", [0.40, 0.50, 0.60, 0.70])
def test_away_from_the_threshold_errors_stay_under_the_level(p: float) -> None:
    result = simulate(SequentialPlan(), p=p, threshold=0.55, trials=2000, seed=2)
    assert result.error_rate <= bound(ONE_SIDED, 2000)


def test_more_looks_decide_more_often_far_from_the_threshold() -> None:
    one = simulate(SequentialPlan(max_looks=1), p=0.70, threshold=0.55, trials=1000, seed=3)
    four = simulate(SequentialPlan(max_looks=4), p=0.70, threshold=0.55, trials=1000, seed=3)
    assert four.decided > one.decided and four.mean_items > one.mean_items


def test_a_pool_that_runs_out_stops_the_looks() -> None:
    pool = [True] * 30 + [False] * 30

    def draw(k: int) -> list[bool]:
        taken = pool[:k]
        del pool[:k]
        return taken

    decision, n = run_plan(SequentialPlan(first=50, step=20), draw, threshold=0.55)
    assert (decision, n) == ("inconclusive", 60)


def test_decide_share_and_bad_plans() -> None:
    assert decide_share(55, 60, 0.55, 0.95) == "pass"
    assert decide_share(20, 60, 0.55, 0.95) == "fail"
    assert decide_share(36, 60, 0.55, 0.95) == "inconclusive"
    with pytest.raises(ValueError):
        SequentialPlan(max_looks=0)
