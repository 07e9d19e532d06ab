"""Position-bias handling for pairwise judges: judge a pair in both orders (or one random order) and measure bias.

A pairwise judge only ever sees "answer A" and "answer B". The caller's two sides are called ``x`` and ``y``
here (the caller knows which is the champion; the judge never does). In ``both`` mode the pair is judged twice,
``x`` shown as A and then ``y`` shown as A, concurrently; each winner is mapped back to ``x``/``y``. When the two
orders agree the pair is *consistent*; when they disagree (including one order calling a tie) the outcome is a
tie, and the disagreement is counted. If either order could not be scored, the outcome is unscored
(``winner=None``): it is never guessed from the other order.

:func:`position_stats` summarises many outcomes: how often the two orders agreed, how often the judge picked the
answer shown first (A) or second (B), and whether that split is lopsided by an exact two-sided binomial test.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.compare_stats import PositionFigures, sign_test_p
from ragreplay.core.pairwise import PairwiseJudgment, PairwiseSide, Winner
from ragreplay.errors import ConfigError
from ragreplay.ports import PairwiseJudge

OrderMode = Literal["both", "random"]
Ordering = Literal["xy", "yx"]
SideWinner = Literal["x", "y", "tie"]

BIAS_ALPHA = 0.05
"""Significance level at which :func:`position_stats` names a favoured position."""


class PairOutcome(BaseModel):
    """The decision on one pair, in the caller's terms (``x``/``y``), with each ordering's judgment.

    ``judgments`` holds ``("xy", j)`` when ``x`` was shown as A, ``("yx", j)`` when ``y`` was shown as A.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    winner: SideWinner | None
    consistent: bool | None
    judgments: list[tuple[Ordering, PairwiseJudgment]]
    mode: OrderMode


def side_winner(ordering: Ordering, winner: Winner | None) -> SideWinner | None:
    """Map a positional winner (A/B/tie) of one ordering back to the caller's sides (x/y/tie)."""
    if winner is None or winner == "tie":
        return winner
    shown_first: SideWinner = "x" if ordering == "xy" else "y"
    shown_second: SideWinner = "y" if ordering == "xy" else "x"
    return shown_first if winner == "A" else shown_second


def _combine(mapped: Sequence[SideWinner | None]) -> tuple[SideWinner | None, bool | None]:
    if any(w is None for w in mapped):
        return None, None
    if all(w == mapped[0] for w in mapped):
        return mapped[0], True
    return "tie", False


async def _both(
    first: Coroutine[Any, Any, PairwiseJudgment], second: Coroutine[Any, Any, PairwiseJudgment]
) -> tuple[PairwiseJudgment, PairwiseJudgment]:
    """Run both orderings at once; the first error propagates as itself and cancels the other ordering."""
    tasks = [asyncio.ensure_future(first), asyncio.ensure_future(second)]
    try:
        a, b = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return a, b


async def judge_pair(
    judge: PairwiseJudge,
    question: str,
    x: PairwiseSide,
    y: PairwiseSide,
    mode: OrderMode = "both",
    rng: random.Random | None = None,
    reference: str | None = None,
) -> PairOutcome:
    """Judge ``x`` against ``y``, against ``reference`` (a correct answer) when there is one.

    ``both``: both orderings, concurrently; disagreement gives a tie with ``consistent=False``; an unscored
    ordering gives ``winner=None``. ``random``: one ordering drawn from ``rng`` (a fresh unseeded generator
    when not given), ``consistent`` is ``None``. Provider errors from the judge propagate (the other ordering
    is cancelled).
    """
    reference = reference if reference and reference.strip() else None

    def call(a: PairwiseSide, b: PairwiseSide) -> Coroutine[Any, Any, PairwiseJudgment]:
        # judges written before references existed keep working where there is none
        if reference is None:
            return judge.judge(question, a, b)
        return judge.judge(question, a, b, reference=reference)

    if mode == "both":
        first, second = await _both(call(x, y), call(y, x))
        judgments: list[tuple[Ordering, PairwiseJudgment]] = [("xy", first), ("yx", second)]
        winner, consistent = _combine([side_winner(o, j.winner) for o, j in judgments])
        return PairOutcome(winner=winner, consistent=consistent, judgments=judgments, mode=mode)
    if mode == "random":
        ordering: Ordering = "xy" if (rng or random.Random()).random() < 0.5 else "yx"
        a, b = (x, y) if ordering == "xy" else (y, x)
        judgment = await call(a, b)
        return PairOutcome(
            winner=side_winner(ordering, judgment.winner),
            consistent=None,
            judgments=[(ordering, judgment)],
            mode=mode,
        )
    raise ConfigError(f"pairwise order mode {mode!r} is not known. Fix: use 'both' or 'random'")


PositionStats = PositionFigures
"""Position bias over many pairs (the type lives in the pure core so reports can use it); see
:class:`ragreplay.core.compare_stats.PositionFigures` for the meaning of each field."""


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value of ``k`` successes in ``n`` trials with p = 1/2 (1.0 for n = 0)."""
    p_value = sign_test_p(k, n)
    return 1.0 if p_value is None else p_value


def position_stats(outcomes: Sequence[PairOutcome]) -> PositionStats:
    """Consistency and first/second-position win counts with a binomial test (see :class:`PositionStats`)."""
    both_scored = [o for o in outcomes if o.mode == "both" and o.consistent is not None]
    positions = [j.winner for o in outcomes for _, j in o.judgments if j.winner is not None]
    return position_of_counts(
        n_pairs=len(outcomes),
        both_scored=len(both_scored),
        consistent=sum(1 for o in both_scored if o.consistent),
        a_wins=positions.count("A"),
        b_wins=positions.count("B"),
        ties=positions.count("tie"),
        unscorable=sum(1 for o in outcomes if o.winner is None),
    )


def position_of_counts(
    *, n_pairs: int, both_scored: int, consistent: int, a_wins: int, b_wins: int, ties: int, unscorable: int
) -> PositionStats:
    """:func:`position_stats` from its counts (e.g. a rollup's): pairs, pairs scored in both orders and of
    them consistent, first / second position wins and ties over every judgment, pairs without a winner."""
    decided = a_wins + b_wins
    p_value = binomial_two_sided(a_wins, decided) if decided else None
    favoured: Literal["A", "B"] | None = None
    if p_value is not None and p_value < BIAS_ALPHA and a_wins != b_wins:
        favoured = "A" if a_wins > b_wins else "B"
    return PositionStats(
        n_pairs=n_pairs,
        consistent=consistent,
        consistency_rate=consistent / both_scored if both_scored else None,
        a_wins=a_wins,
        b_wins=b_wins,
        ties=ties,
        favoured=favoured,
        p_value=p_value,
        unscorable=unscorable,
    )


@dataclass(frozen=True)
class SideScores:
    """Each side's 1-5 scores over the judged orders: the mean of its axes (averaged over orders) and its
    lowest axis; ``None`` where the judge gave no scores."""

    x_mean: float | None
    y_mean: float | None
    x_min: int | None
    y_min: int | None


def side_scores(outcome: PairOutcome) -> SideScores:
    """The axis scores of ``x`` and ``y`` in ``outcome``, mapped back from positions A/B of each ordering."""
    x_axes: list[list[int]] = []
    y_axes: list[list[int]] = []
    for ordering, judgment in outcome.judgments:
        x_scores, y_scores = (
            (judgment.scores_a, judgment.scores_b)
            if ordering == "xy"
            else (judgment.scores_b, judgment.scores_a)
        )
        for scores, into in ((x_scores, x_axes), (y_scores, y_axes)):
            values = list(scores.as_dict().values()) if scores is not None else []
            if values:
                into.append(values)

    def mean(axes: list[list[int]]) -> float | None:
        return sum(sum(v) / len(v) for v in axes) / len(axes) if axes else None

    def lowest(axes: list[list[int]]) -> int | None:
        return min(min(v) for v in axes) if axes else None

    return SideScores(mean(x_axes), mean(y_axes), lowest(x_axes), lowest(y_axes))
