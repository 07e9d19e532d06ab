"""The demo's simulated reviewers: the ground truth's winner and failure tags, seeded slips, overlapping
assignments, the stratified sample of a run, and the judge's decision in champion/challenger terms."""

from __future__ import annotations

from collections import Counter

from ragreplay.core.pairwise import AxisScores, PairwiseJudgment
from ragreplay.core.review import ReviewItem, ReviewSide
from ragreplay.core.runs import ResultRecord, ResultStatus
from ragreplay.core.types import Answer, Verdict
from ragreplay.demo.review_loop import decision, sample_results
from ragreplay.demo.simulated_reviewers import (
    SIMULATED_REVIEWERS,
    SLIP_RATE,
    DocInfo,
    ItemTruth,
    Truth,
    assignments,
    item_truth,
    side_failures,
    simulated_review,
    true_winner,
)
from ragreplay.judges.position import PairOutcome

DOCS = {
    "remote-2022-en": DocInfo("remote-work", "en"),
    "remote-2026-en": DocInfo("remote-work", "en"),
    "thuiswerk-2026-nl": DocInfo("remote-work", "nl"),
    "bonus-nl": DocInfo("bonus", "nl"),
    "bonus-en": DocInfo("bonus", "en"),
}
TRUTH = Truth(expected_doc="remote-2026-en", champion_top_doc="remote-2022-en", language="en")


def test_failure_tags_say_what_is_wrong_with_a_side() -> None:
    assert side_failures("remote-2026-en", ["remote-2026-en"], TRUTH, DOCS) == []
    assert side_failures("remote-2022-en", ["remote-2022-en"], TRUTH, DOCS) == ["wrong-version"]
    assert side_failures("thuiswerk-2026-nl", [], TRUTH, DOCS) == ["wrong-language"]
    assert side_failures("bonus-nl", ["bonus-nl"], TRUTH, DOCS) == ["wrong-language"]
    assert side_failures("bonus-en", ["bonus-en"], TRUTH, DOCS) == ["missing-document"]
    assert side_failures(None, [], TRUTH, DOCS) == ["missing-document"]
    # the right document was retrieved, just not on top: nothing to tag
    assert side_failures("bonus-en", ["bonus-en", "remote-2026-en"], TRUTH, DOCS) == []


def test_the_truth_prefers_the_side_that_alone_is_right() -> None:
    assert true_winner(True, False) == "champion" and true_winner(False, True) == "challenger"
    assert true_winner(True, True) == "tie" == true_winner(False, False)
    item = ReviewItem(
        key="c1",
        source="calibration",
        question="how many days?",
        champion=ReviewSide.model_validate({"answer": "old", "chunks": [{"id": "remote-2022-en#1"}]}),
        challenger_side=ReviewSide.model_validate({"answer": "new", "chunks": [{"id": "remote-2026-en#2"}]}),
    )
    assert item_truth(item, TRUTH, DOCS) == ItemTruth("challenger", ("wrong-version",))


def _item(key: str) -> ReviewItem:
    side = ReviewSide(answer="x")
    return ReviewItem(key=key, source="calibration", question="q", champion=side, challenger_side=side)


def test_simulated_reviews_are_seeded_slip_sometimes_and_map_back_to_the_truth() -> None:
    known = ItemTruth("challenger", ("missing-document",))
    reviews = [simulated_review(_item(f"k{i}"), known, "simulated-1", seed=0) for i in range(1000)]
    again = [simulated_review(_item(f"k{i}"), known, "simulated-1", seed=0) for i in range(1000)]
    assert [r.model_dump(exclude={"submitted_at"}) for r in reviews] == [
        r.model_dump(exclude={"submitted_at"}) for r in again
    ]
    slips = sum(r.winner != "challenger" for r in reviews)
    assert 0.5 * SLIP_RATE * 1000 < slips < 1.5 * SLIP_RATE * 1000
    assert Counter(r.a_side for r in reviews)["champion"] in range(400, 600)  # A is drawn, not fixed
    assert all(r.failure_tags == ["missing-document"] and r.reviewer == "simulated-1" for r in reviews)
    other = [simulated_review(_item(f"k{i}"), known, "simulated-2", seed=0) for i in range(1000)]
    assert sum(a.winner != b.winner for a, b in zip(reviews, other, strict=True)) > 0  # reviewers differ


def test_assignments_share_the_overlap_and_split_the_rest() -> None:
    keys = [f"k{i}" for i in range(20)]
    plan = assignments(keys, SIMULATED_REVIEWERS, overlap=10, seed=0)
    by_key = Counter(k for k, _ in plan)
    assert set(by_key) == set(keys) and Counter(by_key.values()) == {2: 10, 1: 10}
    assert Counter(r for _, r in plan) == {"simulated-1": 15, "simulated-2": 15}
    assert plan == assignments(keys, SIMULATED_REVIEWERS, overlap=10, seed=0)
    assert plan != assignments(keys, SIMULATED_REVIEWERS, overlap=10, seed=1)


def _result(i: int, verdict: Verdict | None, error: str | None = None) -> ResultRecord:
    return ResultRecord(
        run_id="r",
        case_id=f"c{i}",
        status=ResultStatus.ERROR if error else ResultStatus.DONE,
        answer=Answer(text="a", error=error),
        verdict=verdict,
    )


def test_the_sample_spreads_over_the_verdicts_and_leaves_errors_out() -> None:
    results = [_result(i, Verdict.GOOD_FIT) for i in range(30)]
    results += [_result(100 + i, Verdict.BAD_NO_FIT) for i in range(3)]
    results += [_result(200, None, error="timeout")]
    picked = sample_results(results, 6, seed=0)
    verdicts = Counter(r.verdict for r in picked)
    assert verdicts == {Verdict.GOOD_FIT: 3, Verdict.BAD_NO_FIT: 3}
    assert all(r.case_id != "c200" for r in sample_results(results, 100, seed=0))
    assert [r.case_id for r in picked] == [r.case_id for r in sample_results(results, 6, seed=0)]
    assert picked == sorted(picked, key=results.index)  # in the run's order


def test_the_judges_decision_is_in_champion_challenger_terms() -> None:
    def judged(winner: str, a: int, b: int) -> PairwiseJudgment:
        return PairwiseJudgment(
            winner=winner,
            scores_a=AxisScores(groundedness=a),
            scores_b=AxisScores(groundedness=b),
            reason="",
            judge="local:pairwise",
            prompt_version="v1",
        )

    outcome = PairOutcome(
        winner="y",
        consistent=True,
        judgments=[("yx", judged("A", 5, 2)), ("xy", judged("B", 2, 4))],
        mode="both",
    )

    class Judge:
        name = "local:pairwise"
        prompt_version = "v1"

    got = decision(outcome, Judge())  # type: ignore[arg-type]
    assert got.winner == "challenger" and got.judge == "local:pairwise" and got.prompt_version == "v1"
    assert got.scores_champion == {"groundedness": 2} and got.scores_challenger == {"groundedness": 4}
