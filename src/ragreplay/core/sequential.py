"""Deciding a share bar in several looks without inflating the error rate (the gate's ``--until-decided``).

Looking at a 95% interval after every new batch and stopping as soon as it clears the threshold decides wrongly
far more often than 5% of the time: each look is another chance for noise to cross the line. The plan here
spends the error budget evenly over at most ``max_looks`` looks (Bonferroni): each look uses a
``1 - alpha / max_looks`` interval. The chance that any look's interval misses the true share is then at most
``alpha``, so a pass or a fail is wrong with probability at most ``alpha`` whatever the stopping rule.
:func:`simulate` measures it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ragreplay.core.compare_stats import clopper_pearson
from ragreplay.core.gate import Decision, decide


@dataclass(frozen=True)
class SequentialPlan:
    """At most ``max_looks`` looks, the first at ``first`` items and ``step`` more at each later one."""

    confidence: float = 0.95
    max_looks: int = 4
    first: int = 60
    step: int = 20

    def __post_init__(self) -> None:
        if not 0.5 < self.confidence < 1 or self.max_looks < 1 or self.first < 1 or self.step < 1:
            raise ValueError("need 0.5 < confidence < 1 and positive max_looks, first and step")

    @property
    def look_confidence(self) -> float:
        """The confidence of each look's interval (the error budget split evenly over the looks)."""
        return 1 - (1 - self.confidence) / self.max_looks

    def sizes(self) -> list[int]:
        """The number of items at each look."""
        return [self.first + i * self.step for i in range(self.max_looks)]


def decide_share(k: int, n: int, threshold: float, confidence: float) -> Decision:
    """pass when the whole interval is above ``threshold``, fail when it is wholly at or below, else
    inconclusive."""
    if n == 0:
        return "inconclusive"
    low, high = _interval(k, n, confidence)
    return decide(low, high, threshold, k / n, "interval", above=True)


@lru_cache(maxsize=65536)
def _interval(k: int, n: int, confidence: float) -> tuple[float, float]:
    # a simulation asks the same few (k, n) pairs thousands of times
    return clopper_pearson(k, n, confidence)


def run_plan(
    plan: SequentialPlan, draw: Callable[[int], list[bool]], threshold: float
) -> tuple[Decision, int]:
    """Look after each batch of ``draw(n)`` outcomes until a look decides or the looks run out; returns the
    decision and the number of items it took. ``draw`` may return fewer than asked (the pool ran out)."""
    outcomes: list[bool] = []
    decision: Decision = "inconclusive"
    for size in plan.sizes():
        wanted = size - len(outcomes)
        batch = draw(wanted)
        outcomes += batch
        decision = decide_share(sum(outcomes), len(outcomes), threshold, plan.look_confidence)
        if decision != "inconclusive" or len(batch) < wanted:
            break
    return decision, len(outcomes)


@dataclass(frozen=True)
class SimulatedErrors:
    """How often the plan decided wrongly at a true share ``p``, over ``trials`` simulated gates."""

    p: float
    trials: int
    wrong: int
    decided: int
    mean_items: float

    @property
    def error_rate(self) -> float:
        """Wrong decisions per trial (a pass when ``p <= threshold``, a fail when ``p > threshold``)."""
        return self.wrong / self.trials


def simulate(
    plan: SequentialPlan, p: float, threshold: float, trials: int = 2000, seed: int = 0
) -> SimulatedErrors:
    """Simulate ``trials`` gates whose items succeed with probability ``p``; count the wrong decisions."""
    rng = random.Random(seed)
    wrong = decided = items = 0
    for _ in range(trials):
        decision, n = run_plan(plan, lambda k: [rng.random() < p for _ in range(k)], threshold)
        items += n
        if decision != "inconclusive":
            decided += 1
        if (decision == "pass" and p <= threshold) or (decision == "fail" and p > threshold):
            wrong += 1
    return SimulatedErrors(p, trials, wrong, decided, items / trials)
