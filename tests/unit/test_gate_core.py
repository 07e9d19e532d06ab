"""The gate's bars and decision: the requirement's defaults, interval vs point rule (against scipy), exit codes."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError
from scipy.stats import binomtest

from ragreplay.core.gate import (
    EXIT_CODES,
    GatePolicy,
    ItemOutcome,
    contested_bar,
    decide,
    evaluate,
    stored_policy,
    wins_bar,
    wounds_bar,
)


def win(i: int, winner: str = "tie", consistent: bool = False) -> ItemOutcome:
    return ItemOutcome(key=f"w{i}", stratum="win", winner=winner, consistent=consistent)  # type: ignore[arg-type]


def contested(i: int, winner: str) -> ItemOutcome:
    return ItemOutcome(key=f"c{i}", stratum="contested", winner=winner, consistent=winner != "tie")  # type: ignore[arg-type]


def wound(i: int, score: float | None, reference: bool | None = None) -> ItemOutcome:
    return ItemOutcome(key=f"o{i}", stratum="wound", challenger_score=score, matches_reference=reference)


def test_a_win_is_lost_only_when_the_champion_wins_both_orders() -> None:
    items = [win(0, "champion", True), win(1, "champion", False), win(2, "tie"), win(3, "challenger", True)]
    bar = wins_bar(items, GatePolicy())
    assert (bar.k, bar.n, bar.decision, bar.listed) == (1, 4, "fail", ["w0"])
    assert wins_bar(items, GatePolicy(allowed_losses=1)).decision == "pass"
    assert wins_bar(items[1:], GatePolicy()).decision == "pass"


def test_unscorable_and_errored_wins_are_counted_apart() -> None:
    items = [
        win(0),
        ItemOutcome(key="x", stratum="win", winner=None),
        ItemOutcome(key="e", stratum="win", error="boom"),
    ]
    bar = wins_bar(items, GatePolicy())
    assert (bar.n, bar.unscored) == (1, 2)
    assert wins_bar(items[1:], GatePolicy()).decision == "inconclusive"  # nothing judged: no decision


@pytest.mark.parametrize(
    ("k", "n"), [(40, 60), (45, 60), (33, 60), (25, 60), (20, 30), (8, 10), (0, 5), (5, 5)]
)
def test_contested_interval_decision_matches_scipy(k: int, n: int) -> None:
    items = [contested(i, "challenger") for i in range(k)] + [
        contested(k + i, "champion") for i in range(n - k)
    ]
    items.append(contested(999, "tie"))  # ties are reported apart, never decided on
    bar = contested_bar(items, GatePolicy())
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    assert bar.low == pytest.approx(ci.low, abs=1e-9) and bar.high == pytest.approx(ci.high, abs=1e-9)
    expected = "pass" if ci.low > 0.55 else "fail" if ci.high <= 0.55 else "inconclusive"
    assert bar.decision == expected and (bar.k, bar.n, bar.unscored, bar.ties) == (k, n, 0, 1)
    point = contested_bar(items, GatePolicy(rule="point"))
    assert point.decision == ("pass" if k / n > 0.55 else "fail")


def test_the_point_rule_for_wounds_is_twenty_of_sixty() -> None:
    items = [wound(i, 4.5) for i in range(20)] + [wound(20 + i, 2.0) for i in range(40)]
    assert wounds_bar(items, GatePolicy(rule="point")).decision == "pass"
    assert wounds_bar([*items[1:], wound(99, 3.9)], GatePolicy(rule="point")).decision == "fail"
    # the interval rule is honest about 60 items: 20/60 exactly cannot clear one third
    assert wounds_bar(items, GatePolicy()).decision == "inconclusive"
    clear = [wound(i, 5.0) for i in range(40)] + [wound(40 + i, 1.0) for i in range(20)]
    assert wounds_bar(clear, GatePolicy()).decision == "pass"
    hopeless = [wound(i, 5.0) for i in range(5)] + [wound(5 + i, 1.0) for i in range(55)]
    assert wounds_bar(hopeless, GatePolicy()).decision == "fail"


def test_a_reviewed_correct_answer_decides_a_wound_before_the_score() -> None:
    assert wound(0, 5.0, reference=False).fixed(4.0) is False
    assert wound(0, 1.0, reference=True).fixed(4.0) is True
    assert wound(0, None).fixed(4.0) is None
    bar = wounds_bar([wound(0, None), wound(1, 4.0)], GatePolicy())
    assert (bar.k, bar.n, bar.unscored) == (1, 1, 1)


def test_decide_covers_every_side_of_the_threshold() -> None:
    assert decide(0.6, 0.8, 0.55, 0.7, "interval", above=True) == "pass"
    assert decide(0.3, 0.5, 0.55, 0.4, "interval", above=True) == "fail"
    assert decide(0.5, 0.7, 0.55, 0.6, "interval", above=True) == "inconclusive"
    assert decide(0.0, 0.1, 0.2, 0.05, "interval", above=False) == "pass"
    assert decide(0.3, 0.5, 0.2, 0.4, "interval", above=False) == "fail"
    assert decide(0.5, 0.7, 0.55, None, "point", above=True) == "inconclusive"


def test_overall_decision_and_exit_codes() -> None:
    good = (
        [win(i) for i in range(80)]
        + [contested(i, "challenger") for i in range(50)]
        + [contested(50 + i, "champion") for i in range(10)]
        + [wound(i, 5.0) for i in range(45)]
        + [wound(45 + i, 1.0) for i in range(15)]
    )
    verdict = evaluate(good, GatePolicy())
    assert verdict.decision == "pass" and verdict.exit_code == 0
    lost = [win(0, "champion", True), *good[1:]]
    assert evaluate(lost, GatePolicy()).exit_code == 1
    close = (
        good[:80]
        + [contested(i, "challenger") for i in range(36)]
        + [contested(99 + i, "champion") for i in range(24)]
        + good[140:]
    )
    assert evaluate(close, GatePolicy()).exit_code == 2
    # a local judge the user did not accept never decides
    capped = evaluate(good, GatePolicy(), local_judge_accepted=False)
    assert capped.exit_code == 2 and any("--accept-local-judge" in r for r in capped.reasons)
    assert evaluate(lost, GatePolicy(), local_judge_accepted=False).exit_code == 2
    assert EXIT_CODES == {"pass": 0, "fail": 1, "inconclusive": 2, "error": 3}


def test_a_gate_where_most_items_errored_never_passes() -> None:
    items = [
        ItemOutcome(key=f"e{i}", stratum=s, error="target down")
        for i, s in zip(range(150), itertools.cycle(["win", "contested", "wound"]), strict=False)
    ]
    items += [win(i) for i in range(50)]
    verdict = evaluate(items, GatePolicy())
    assert verdict.decision == "error" and verdict.exit_code == 3
    assert evaluate([], GatePolicy()).exit_code == 3
    # no policy lets it pass: one asking for more than half is refused by name...
    for share in (0.5, 0.9, 1.0):
        with pytest.raises(ValidationError, match=r"max_error_share must be under 0\.5"):
            GatePolicy(max_error_share=share)
    assert GatePolicy(max_error_share=0.49).max_error_share == 0.49
    # ...and one that got past validation (built unchecked, or stored before the cap) is capped at half
    lax = GatePolicy.model_construct(**{**GatePolicy().model_dump(), "max_error_share": 0.9})
    capped = evaluate(items, lax)
    assert capped.decision == "error" and capped.exit_code == 3
    assert "150 of 200" in capped.reasons[0] and "more than 50%" in capped.reasons[0]
    half = items[50:] + [win(100 + i) for i in range(50)]  # 100 of 200 errored: not most, the policy decides
    assert evaluate(half, lax).exit_code != 3
    assert evaluate(half, GatePolicy(max_error_share=0.49)).exit_code == 3


def test_a_stored_policy_from_before_the_cap_is_still_read() -> None:
    stored = {**GatePolicy().model_dump(mode="json"), "max_error_share": 0.9, "rule": "point"}
    policy = stored_policy(stored)
    assert policy.rule == "point" and policy.max_error_share == 0.9
    assert stored_policy(GatePolicy().model_dump(mode="json")) == GatePolicy()
    with pytest.raises(ValidationError, match="min_preference"):
        stored_policy({"max_error_share": 0.9, "min_preference": 2})


def test_a_bad_policy_names_the_field() -> None:
    with pytest.raises(ValidationError, match="min_preference"):
        GatePolicy(min_preference=1.5)
    with pytest.raises(ValidationError, match="allowed_loses"):
        GatePolicy.model_validate({"allowed_loses": 1})


def test_a_wound_graduates_after_n_consecutive_fixes() -> None:
    from ragreplay.core.gate import graduated

    fixed, open_ = wound(0, 4.5), wound(0, 2.0)
    assert graduated([open_, fixed, fixed, fixed], after=3)
    assert not graduated([fixed, fixed, open_, fixed, fixed], after=3)  # the run restarts after a miss
    assert not graduated([fixed, fixed], after=3)
    errored = ItemOutcome(key="o0", stratum="wound", error="down")
    assert not graduated([fixed, errored, fixed], after=2)
