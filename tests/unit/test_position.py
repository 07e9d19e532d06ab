"""Both-order pairwise judging, order consistency and the position-bias statistics, on scripted judges."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from scipy.stats import binomtest

from ragreplay.core.chat import ProviderError
from ragreplay.core.pairwise import PairwiseJudgment, PairwiseSide, Winner
from ragreplay.errors import ConfigError
from ragreplay.judges.position import (
    PairOutcome,
    binomial_two_sided,
    judge_pair,
    position_stats,
    side_winner,
)

Rule = Callable[[str, PairwiseSide, PairwiseSide], Winner | None]


class ScriptedJudge:
    """A pairwise judge that decides by a rule and records every (question, A text, B text) it is shown."""

    name = "scripted"
    prompt_version = "scripted-1"

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.calls: list[tuple[str, str, str]] = []

    async def judge(self, question: str, a: PairwiseSide, b: PairwiseSide) -> PairwiseJudgment:
        self.calls.append((question, a.answer, b.answer))
        await asyncio.sleep(0)
        winner = self.rule(question, a, b)
        return PairwiseJudgment(
            winner=winner,
            scores_a=None,
            scores_b=None,
            reason="scripted" if winner else "could not score",
            judge=self.name,
            prompt_version=self.prompt_version,
        )


def always(w: Winner | None) -> Rule:
    return lambda _q, _a, _b: w


def better_content(_q: str, a: PairwiseSide, b: PairwiseSide) -> Winner:
    """Content-based: the answer with more words wins; equal length -> tie."""
    la, lb = len(a.answer.split()), len(b.answer.split())
    return "A" if la > lb else "B" if lb > la else "tie"


X = PairwiseSide(answer="Twenty five days of annual leave per year")
Y = PairwiseSide(answer="Twenty days")


async def test_always_a_is_inconsistent_and_favours_a() -> None:
    judge = ScriptedJudge(always("A"))
    outcomes = [await judge_pair(judge, f"q{i}", X, Y) for i in range(10)]
    assert all(o.winner == "tie" and o.consistent is False for o in outcomes)
    stats = position_stats(outcomes)
    assert (stats.n_pairs, stats.consistent, stats.consistency_rate) == (10, 0, 0.0)
    assert (stats.a_wins, stats.b_wins, stats.ties) == (20, 0, 0)
    assert stats.favoured == "A"
    assert stats.p_value == pytest.approx(binomtest(20, 20, 0.5).pvalue)


async def test_always_b_favours_b() -> None:
    outcomes = [await judge_pair(ScriptedJudge(always("B")), "q", X, Y) for _ in range(6)]
    stats = position_stats(outcomes)
    assert (stats.a_wins, stats.b_wins, stats.favoured) == (0, 12, "B")


async def test_content_judge_is_consistent_and_maps_back_to_sides() -> None:
    judge = ScriptedJudge(better_content)
    outcome = await judge_pair(judge, "q", X, Y)
    assert (outcome.winner, outcome.consistent, outcome.mode) == ("x", True, "both")
    assert [o for o, _ in outcome.judgments] == ["xy", "yx"]
    assert [j.winner for _, j in outcome.judgments] == ["A", "B"]
    flipped = await judge_pair(judge, "q", Y, X)
    assert (flipped.winner, flipped.consistent) == ("y", True)
    tie = await judge_pair(judge, "q", X, X)
    assert (tie.winner, tie.consistent) == ("tie", True)
    stats = position_stats([outcome, flipped, tie])
    assert (stats.consistent, stats.consistency_rate) == (3, 1.0)
    assert (stats.a_wins, stats.b_wins, stats.ties) == (2, 2, 2)
    assert stats.favoured is None and stats.p_value == 1.0


async def test_both_orders_are_called_with_each_side_shown_first() -> None:
    judge = ScriptedJudge(better_content)
    await judge_pair(judge, "how many days?", X, Y)
    assert sorted(judge.calls) == sorted(
        [("how many days?", X.answer, Y.answer), ("how many days?", Y.answer, X.answer)]
    )


async def test_both_orders_run_concurrently() -> None:
    started = 0
    both_started = asyncio.Event()

    class Waiting(ScriptedJudge):
        async def judge(self, question: str, a: PairwiseSide, b: PairwiseSide) -> PairwiseJudgment:
            nonlocal started
            started += 1
            if started == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), timeout=2)
            return await super().judge(question, a, b)

    outcome = await judge_pair(Waiting(better_content), "q", X, Y)
    assert outcome.winner == "x"


async def test_one_order_calling_a_tie_is_an_inconsistent_tie() -> None:
    # A tie when X is shown first, X wins when Y is shown first.
    judge = ScriptedJudge(lambda _q, a, _b: "tie" if a is X else "B")
    outcome = await judge_pair(judge, "q", X, Y)
    assert (outcome.winner, outcome.consistent) == ("tie", False)


async def test_unscorable_ordering_gives_no_winner() -> None:
    judge = ScriptedJudge(lambda _q, a, _b: None if a is Y else "A")
    outcome = await judge_pair(judge, "q", X, Y)
    assert (outcome.winner, outcome.consistent) == (None, None)
    assert len(outcome.judgments) == 2
    stats = position_stats([outcome])
    assert (stats.consistent, stats.consistency_rate, stats.unscorable) == (0, None, 1)
    assert (stats.a_wins, stats.b_wins) == (1, 0)  # the scored ordering still counts for position


async def test_mixture_gives_exact_counts() -> None:
    def mixed(q: str, a: PairwiseSide, b: PairwiseSide) -> Winner | None:
        kind = q.split(":")[0]
        if kind == "biased":
            return "A"
        if kind == "content":
            return better_content(q, a, b)
        if kind == "tie":
            return "tie"
        return None if a is X else "A"  # "broken": the xy ordering cannot be scored

    judge = ScriptedJudge(mixed)
    questions = ["biased:1", "biased:2", "content:1", "content:2", "content:3", "tie:1", "broken:1"]
    outcomes = [await judge_pair(judge, q, X, Y) for q in questions]
    assert [o.winner for o in outcomes] == ["tie", "tie", "x", "x", "x", "tie", None]
    assert [o.consistent for o in outcomes] == [False, False, True, True, True, True, None]
    stats = position_stats(outcomes)
    assert stats.n_pairs == 7
    assert (stats.consistent, stats.consistency_rate) == (4, pytest.approx(4 / 6))
    # biased: 4 A; content: 3 A (x first) + 3 B (x second); tie: 2 ties; broken: 1 A (yx ordering).
    assert (stats.a_wins, stats.b_wins, stats.ties, stats.unscorable) == (8, 3, 2, 1)
    assert stats.p_value == pytest.approx(binomtest(8, 11, 0.5).pvalue)
    assert stats.favoured is None  # p ~ 0.23: not enough to name a favoured position


async def test_random_mode_uses_the_seeded_rng() -> None:
    judge = ScriptedJudge(always("A"))
    rng = random.Random(42)
    outcomes = [await judge_pair(judge, "q", X, Y, mode="random", rng=rng) for _ in range(40)]
    replay = random.Random(42)
    expected = ["xy" if replay.random() < 0.5 else "yx" for _ in range(40)]
    assert [o.judgments[0][0] for o in outcomes] == expected
    assert all(len(o.judgments) == 1 and o.consistent is None and o.mode == "random" for o in outcomes)
    # The always-A judge picks whichever side was shown first.
    assert [o.winner for o in outcomes] == ["x" if e == "xy" else "y" for e in expected]
    assert 5 < expected.count("xy") < 35
    stats = position_stats(outcomes)
    assert (stats.consistent, stats.consistency_rate) == (0, None)
    assert (stats.a_wins, stats.favoured) == (40, "A")
    assert len(judge.calls) == 40


async def test_unknown_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="both"):
        await judge_pair(ScriptedJudge(always("A")), "q", X, Y, mode="sometimes")  # type: ignore[arg-type]


async def test_provider_error_propagates_and_cancels_other_order() -> None:
    cancelled = asyncio.Event()

    class Failing(ScriptedJudge):
        async def judge(self, question: str, a: PairwiseSide, b: PairwiseSide) -> PairwiseJudgment:
            if a is X:
                await asyncio.sleep(0)
                raise ProviderError("boom", transient=False)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("not reached")

    with pytest.raises(ProviderError, match="boom"):
        await judge_pair(Failing(always("A")), "q", X, Y)
    assert cancelled.is_set()


def test_side_winner_mapping() -> None:
    assert [side_winner("xy", w) for w in ("A", "B", "tie", None)] == ["x", "y", "tie", None]
    assert [side_winner("yx", w) for w in ("A", "B", "tie", None)] == ["y", "x", "tie", None]


@pytest.mark.parametrize(
    ("k", "n"), [(0, 0), (0, 1), (3, 6), (5, 6), (6, 6), (0, 20), (13, 20), (60, 100), (1, 7)]
)
def test_binomial_matches_scipy(k: int, n: int) -> None:
    expected = binomtest(k, n, 0.5).pvalue if n else 1.0
    assert binomial_two_sided(k, n) == pytest.approx(expected, rel=1e-9)


def test_binomial_rejects_bad_counts() -> None:
    with pytest.raises(ValueError):
        binomial_two_sided(5, 3)


def test_stats_of_nothing() -> None:
    stats = position_stats([])
    assert (stats.n_pairs, stats.consistency_rate, stats.p_value, stats.favoured) == (0, None, None, None)


def test_outcome_is_frozen() -> None:
    outcome = PairOutcome(winner="x", consistent=True, judgments=[], mode="both")
    with pytest.raises(ValueError):
        outcome.winner = "y"  # type: ignore[misc]


async def test_judge_never_sees_which_side_is_champion_or_challenger() -> None:
    from builders import make_case
    from ragreplay.judges.pairwise import LLMPairwiseJudge
    from ragreplay.providers.fake import FakeChatModel
    from ragreplay.providers.scripted import ScriptedChatModel
    from ragreplay.targets.fake import FakeTarget

    question = "How many days of annual leave do I get?"
    champion = FakeTarget(
        {question: {"answer": "20 days.", "contexts": [{"id": "leave-2024#1", "text": "Leave is 20 days."}]}},
        name="champion",
    )
    challenger = FakeTarget(
        {question: {"answer": "25 days.", "contexts": [{"id": "leave-2026#1", "text": "Leave is 25 days."}]}},
        name="challenger-x",
    )
    case = make_case(conversation_id="conv1", query=question, old_answer="20")
    sides = []
    for target in (champion, challenger):
        answer = await target.answer(question, case)
        sides.append(PairwiseSide(answer=answer.text, contexts=list(answer.contexts)))

    fake = FakeChatModel()
    model = ScriptedChatModel(fake.complete, name=fake.name)  # the fake's answers, its requests recorded
    await judge_pair(LLMPairwiseJudge(model), question, sides[0], sides[1])
    assert len(model.requests) == 2
    firsts = set()
    for request in model.requests:
        shown = request.model_dump_json().lower()
        assert "champion" not in shown and "challenger" not in shown
        firsts.add(request.hints["answer_a"])
    assert firsts == {"20 days.", "25 days."}


def test_side_scores_map_positions_back_to_the_callers_sides() -> None:
    from ragreplay.core.pairwise import AxisScores, PairwiseJudgment
    from ragreplay.judges.position import PairOutcome, side_scores

    def judged(a: AxisScores, b: AxisScores) -> PairwiseJudgment:
        return PairwiseJudgment(winner="A", scores_a=a, scores_b=b, reason="", judge="j", prompt_version="p")

    high = AxisScores(groundedness=5, completeness=5, directness=4, recency=4)
    low = AxisScores(groundedness=2, completeness=1, directness=3, recency=2)
    # x shown first scores high; shown second (yx) x is B and scores 4s
    four = AxisScores(groundedness=4, completeness=4, directness=4, recency=4)
    outcome = PairOutcome(
        winner="x",
        consistent=True,
        judgments=[("xy", judged(high, low)), ("yx", judged(low, four))],
        mode="both",
    )
    scores = side_scores(outcome)
    assert scores.x_mean == (4.5 + 4.0) / 2 and scores.x_min == 4
    assert scores.y_mean == 2.0 and scores.y_min == 1
    unscored = PairOutcome(winner=None, consistent=None, judgments=[], mode="both")
    assert side_scores(unscored).x_mean is None and side_scores(unscored).y_min is None
