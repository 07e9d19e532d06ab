"""The regression set's pure parts: strata rules, pooling, near-duplicates, clusters, allocation, the seeded
stratified sample (sizes, pins, reproducibility, inclusion probabilities checked by simulation), weights,
the reweighted share and the diff of two versions."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from ragreplay.core.regset import (
    DEFAULT_SIZES,
    STRATA,
    Candidate,
    Pooled,
    RegressionSetRecord,
    SetItem,
    Stratum,
    allocate,
    as_pinned,
    classify,
    cluster_probability,
    diff_sets,
    inputs_digest,
    leader_clusters,
    merge_near_duplicates,
    normalise,
    pool,
    question_key,
    select,
    strata_counts,
    water_level,
    weighted_share,
)
from ragreplay.core.types import Feedback, Fit


def cand(question: str = "how many leave days", **fields: Any) -> Candidate:
    fields.setdefault("source", "shadow")
    fields.setdefault("source_id", f"row-{question}")
    return Candidate(question=question, **fields)


# --- classify ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {
            "open_wound": True,
            "feedback": Feedback.GOOD,
        },  # an earlier gate left it open, whatever the user said
        {"feedback": Feedback.BAD},
        {
            "feedback": Feedback.BAD,
            "judge_winner": "champion",
            "consistent": True,
        },  # disliked beats the judge
        {"failure_tag": "wrong-version"},  # a reviewer marked it wrong
        # a reviewer wrote the correct answer (reviewed as wrong) without a tag
        {"reference_answer": "Twenty-five days a year.", "champion_answer": "Twenty days."},
        {
            "reference_answer": "Twenty-five days a year.",
            "feedback": Feedback.GOOD,
            "judge_winner": "champion",
            "consistent": True,
        },  # the reviewer's correction beats the user's like and the judge
        {"champion_score": 2.0},
        {
            "champion_score": 1.5,
            "agreement": Fit.NO_FIT,
            "judge_winner": "tie",
        },  # low score before close call
    ],
)
def test_wound_rules(fields: dict[str, Any]) -> None:
    assert classify(cand(**fields)) == "wound"


@pytest.mark.parametrize(
    "fields",
    [
        {"agreement": Fit.NO_FIT, "judge_winner": "tie", "consistent": True},
        {"agreement": Fit.NO_FIT, "judge_winner": "tie", "consistent": False},  # the two orders disagreed
        {"agreement": Fit.NO_FIT, "judge_winner": "champion", "consistent": False},
        {
            "agreement": Fit.NO_FIT,
            "judge_winner": "champion",
            "champion_score": 3.5,
            "challenger_score": 3.25,
        },
        # the judge and the user disagree
        {"feedback": Feedback.GOOD, "judge_winner": "challenger", "consistent": True},
        {"feedback": Feedback.GOOD, "champion_score": 2.0},
        # contested beats win: liked, but a close call between two different answers
        {"feedback": Feedback.GOOD, "agreement": Fit.NO_FIT, "judge_winner": "tie"},
    ],
)
def test_contested_rules(fields: dict[str, Any]) -> None:
    assert classify(cand(**fields)) == "contested"


def test_a_reviewers_answer_that_is_the_champions_is_no_wound() -> None:
    same = cand(champion_answer="Twenty days.", reference_answer="twenty days", feedback=Feedback.GOOD)
    assert classify(same) == "win"


@pytest.mark.parametrize(
    "fields",
    [
        {"feedback": Feedback.GOOD},
        {"judge_winner": "champion", "consistent": True},
        {"agreement": Fit.NO_FIT, "judge_winner": "champion", "consistent": True},
        {"agreement": Fit.FIT, "champion_min_axis": 4},
        {"agreement": Fit.FIT, "champion_min_axis": 5, "judge_winner": "tie", "consistent": True},
        {
            "feedback": Feedback.GOOD,
            "judge_winner": "challenger",
            "consistent": False,
        },  # not a clear preference
    ],
)
def test_win_rules(fields: dict[str, Any]) -> None:
    assert classify(cand(**fields)) == "win"


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"agreement": Fit.FIT, "champion_min_axis": 3},  # agreed, but not 4+ across the board
        {"agreement": Fit.FIT, "judge_winner": "tie"},  # agreement and a tie is no disagreement
        {
            "agreement": Fit.NO_FIT,
            "judge_winner": "challenger",
            "consistent": True,
        },  # a clear loss, not close
        {"judge_winner": "champion", "consistent": None},  # one random order: not clearly preferred
        {"agreement": Fit.UNSCORABLE, "judge_winner": "tie"},
    ],
)
def test_fits_no_stratum(fields: dict[str, Any]) -> None:
    assert classify(cand(**fields)) is None


def test_margin_decides_how_close_is_close() -> None:
    scores = {
        "agreement": Fit.NO_FIT,
        "judge_winner": "champion",
        "champion_score": 4.0,
        "challenger_score": 3.5,
    }
    assert classify(cand(**scores), margin=0.75) == "contested"
    assert classify(cand(**scores), margin=0.5) is None  # |4.0 - 3.5| = 0.5 is not under 0.5
    assert classify(cand(**scores, consistent=True), margin=0.5) == "win"


def test_key_is_the_normalised_question() -> None:
    assert normalise("  Hoeveel vakantiedagen krijg ik?  ") == "hoeveel vakantiedagen krijg ik"
    assert normalise("Café, crème!") == "cafe creme"
    assert (
        cand("How many   leave days?").key
        == cand("how many leave days").key
        == question_key("HOW MANY LEAVE DAYS")
    )
    assert cand("how many sick days").key != cand("how many leave days").key
    assert cand("x").key.startswith("q_") and len(cand("x").key) == 18


# --- pool -------------------------------------------------------------------------------------------------


def test_pool_takes_the_most_pressing_stratum_of_a_question() -> None:
    pooled = pool(
        [
            cand("q1", source_id="a", feedback=Feedback.GOOD),
            cand("Q1!", source_id="b", agreement=Fit.NO_FIT, judge_winner="tie"),
            cand("q1", source_id="c", feedback=Feedback.BAD, request_id="r-c"),
            cand("q2", source_id="d", feedback=Feedback.GOOD),
            cand("q2", source_id="e", agreement=Fit.NO_FIT, judge_winner="tie"),
            cand("q3", source_id="f", feedback=Feedback.GOOD),
        ]
    )
    got = {p.candidate.question.lower().strip("!"): (p.stratum, p.candidate.source_id) for p in pooled}
    assert got == {"q1": ("wound", "c"), "q2": ("contested", "e"), "q3": ("win", "f")}
    assert [p.candidate.key for p in pooled] == sorted(p.candidate.key for p in pooled)


def test_pool_counts_requests_once_each() -> None:
    pooled = pool(
        [
            # one request answered by two challengers: two rows, one request
            cand("q1", source_id="row-1b", request_id="req-1", challenger="b", feedback=Feedback.GOOD),
            cand("q1", source_id="row-1c", request_id="req-1", challenger="c", feedback=Feedback.GOOD),
            cand("q1", source_id="row-2b", request_id="req-2", challenger="b", feedback=Feedback.GOOD),
            # a replayed case is its own request, and may stand for several
            cand("q1", source="replay", source_id="case_1", feedback=Feedback.GOOD, count=3),
            cand("q1", source_id="row-3", request_id="req-3"),  # fits no stratum: not counted
        ]
    )
    assert [(p.stratum, p.count) for p in pooled] == [("win", 1 + 1 + 3)]


def test_pool_leaves_out_dropped_and_unclassified_and_graduates_fixed_wounds() -> None:
    wound, win, nothing = cand("q1", feedback=Feedback.BAD), cand("q2", feedback=Feedback.GOOD), cand("q3")
    assert {p.candidate.key for p in pool([wound, win, nothing])} == {wound.key, win.key}
    assert [p.candidate.key for p in pool([wound, win], dropped=frozenset({wound.key}))] == [win.key]
    graduated = pool([wound, win], graduated=frozenset({wound.key, win.key}))
    assert {p.candidate.key: p.stratum for p in graduated} == {wound.key: "win", win.key: "win"}
    contested = cand("q4", agreement=Fit.NO_FIT, judge_winner="tie")
    assert pool([contested], graduated=frozenset({contested.key}))[0].stratum == "contested"


# --- near duplicates and clusters ---------------------------------------------------------------------------


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    normalised: np.ndarray = v / np.linalg.norm(v)
    return normalised


def test_near_duplicates_merge_within_a_stratum_only() -> None:
    a, b, c, d = (
        Pooled("win", cand("q a"), 2),
        Pooled("win", cand("q b"), 3),
        Pooled("wound", cand("q c"), 1),
        Pooled("win", cand("q d"), 1),
    )
    vectors = np.stack([unit(1, 0), unit(1, 0.01), unit(1, 0), unit(0, 1)])
    merged = merge_near_duplicates([a, b, c, d], vectors, threshold=0.95)
    assert [(p.candidate.question, p.count, p.merged) for p in merged] == [
        ("q a", 5, (b.candidate.key,)),
        ("q c", 1, ()),  # as close as b, but another stratum
        ("q d", 1, ()),
    ]
    again = merge_near_duplicates([merged[0], Pooled("win", cand("q e"), 1)], np.stack([unit(1, 0)] * 2))
    assert again[0].merged == (b.candidate.key, cand("q e").key) and again[0].count == 6
    kept = merge_near_duplicates([a, b], vectors[:2], threshold=0.95, keep=frozenset({b.candidate.key}))
    assert [(p.candidate.question, p.count) for p in kept] == [("q a", 2), ("q b", 3)]  # a pin stays itself
    with pytest.raises(ValueError, match="one vector"):
        merge_near_duplicates([a, b], vectors)


def test_leader_clusters() -> None:
    vectors = np.stack([unit(1, 0), unit(0, 1), unit(1, 0.1), unit(0.1, 1), unit(1, 1)])
    assert leader_clusters(vectors, threshold=0.9) == [0, 1, 0, 1, 2]
    assert leader_clusters(vectors, threshold=0.5) == [0, 1, 0, 1, 0]
    assert leader_clusters(np.zeros((0, 2))) == []


# --- allocate ---------------------------------------------------------------------------------------------


def check_allocation(sizes: list[int], quota: int, rng: random.Random | None = None) -> list[int]:
    picks = allocate(sizes, quota, rng)
    assert len(picks) == len(sizes)
    assert sum(picks) == min(quota, sum(sizes))
    assert all(0 <= p <= s for p, s in zip(picks, sizes, strict=True))
    open_picks = [p for p, s in zip(picks, sizes, strict=True) if p < s]
    if open_picks:  # among clusters not exhausted: as even as it gets ...
        assert max(open_picks) - min(open_picks) <= 1
        # ... and no cluster got more than one above a cluster that still had questions left
        assert max(picks) <= min(open_picks) + 1
    return picks


def test_allocate_examples() -> None:
    assert check_allocation([5, 5, 5], 7) == [3, 2, 2]
    assert check_allocation([1, 10], 6) == [1, 5]
    assert check_allocation([2, 2], 10) == [2, 2]
    assert check_allocation([100, 1, 1, 1], 8) == [
        5,
        1,
        1,
        1,
    ]  # the frequent cluster cannot crowd the rare out
    assert check_allocation([], 5) == []
    assert check_allocation([3, 4], 0) == [0, 0]


def test_allocate_property_over_random_size_lists() -> None:
    rng = random.Random(20261201)
    for _ in range(2000):
        sizes = [rng.choice([1, 1, 2, 3, 5, 8, 40, 200]) for _ in range(rng.randint(1, 30))]
        quota = rng.randint(0, sum(sizes) + 20)
        fixed = check_allocation(sizes, quota)
        drawn = check_allocation(sizes, quota, random.Random(rng.random()))
        level, extra = water_level(sizes, quota)
        for picks in (fixed, drawn):  # the same shape: the level everywhere, one more in `extra` clusters
            assert sorted(p - min(s, level) for p, s in zip(picks, sizes, strict=True)) == sorted(
                [0] * (len(sizes) - extra) + [1] * extra
            )


def test_the_extra_picks_go_to_clusters_drawn_at_random() -> None:
    # 3 picks over 5 clusters: one each for 3 of them; without a generator always the first three
    assert allocate([1, 1, 2, 3, 6], 3) == [1, 1, 1, 0, 0]
    drawn = Counter(tuple(allocate([1, 1, 2, 3, 6], 3, random.Random(s))) for s in range(2000))
    assert len(drawn) == 10  # every choice of 3 clusters of 5 occurs
    assert water_level([1, 1, 2, 3, 6], 3) == (0, 3)
    assert water_level([5, 5, 5], 7) == (2, 1) and water_level([1, 10], 6) == (5, 0)
    assert water_level([2, 2], 10) == (2, 0) and water_level([], 3) == (0, 0)
    # a question of the 6-cluster: picked when its cluster is (3/5), then 1 of 6
    assert cluster_probability(6, [1, 1, 2, 3, 6], 3) == pytest.approx(3 / 5 / 6)
    assert cluster_probability(1, [1, 10], 6) == 1.0 and cluster_probability(10, [1, 10], 6) == 0.5
    assert cluster_probability(4, [1, 4, 4], 4) == pytest.approx(1.5 / 4)


# --- select -----------------------------------------------------------------------------------------------


def make_pool(spec: dict[Stratum, list[int]]) -> tuple[list[Pooled], list[int]]:
    """A pool with, per stratum, one cluster per listed size; question ``i`` of cluster ``c`` stands for
    ``1 + i % 3`` requests."""
    pooled: list[Pooled] = []
    clusters: list[int] = []
    number = 0
    for stratum, sizes in spec.items():
        for size in sizes:
            for i in range(size):
                pooled.append(Pooled(stratum, cand(f"{stratum} c{number} q{i}"), 1 + i % 3))
                clusters.append(number)
            number += 1
    return pooled, clusters


SPEC: dict[Stratum, list[int]] = {"win": [2, 5, 10, 30], "contested": [1, 4, 4], "wound": [6]}


def test_select_fills_each_stratum_exactly_when_the_pool_allows() -> None:
    pooled, clusters = make_pool(SPEC)
    chosen = select(pooled, clusters, {"win": 12, "contested": 5, "wound": 3}, seed=1)
    assert strata_counts(chosen.items) == {"win": 12, "contested": 5, "wound": 3}
    assert chosen.pool_sizes == {"win": 47, "contested": 9, "wound": 6}
    assert chosen.clusters == {"win": 4, "contested": 3, "wound": 1}
    per_cluster = Counter(i.cluster for i in chosen.items if i.stratum == "win")
    assert sorted(per_cluster.values()) == [2, 3, 3, 4]  # allocate([2, 5, 10, 30], 12) = [2, 4, 3, 3]
    assert len({i.key for i in chosen.items}) == 20


def test_select_takes_what_there_is_when_a_stratum_is_short() -> None:
    pooled, clusters = make_pool(SPEC)
    chosen = select(pooled, clusters, DEFAULT_SIZES, seed=1)
    assert strata_counts(chosen.items) == {"win": 47, "contested": 9, "wound": 6}
    assert all(i.inclusion_probability == 1.0 for i in chosen.items)
    assert strata_counts(select(pooled, clusters, {"win": 3}, seed=1).items) == {
        "win": 3,
        "contested": 0,
        "wound": 0,
    }


def test_pinned_items_are_always_in_and_count_toward_the_quota() -> None:
    pooled, clusters = make_pool(SPEC)
    wins = [p.candidate.key for p in pooled if p.stratum == "win"]
    pinned = frozenset(wins[-3:])  # three of the large cluster
    for seed in range(20):
        chosen = select(pooled, clusters, {"win": 8, "contested": 2, "wound": 1}, seed=seed, pinned=pinned)
        assert strata_counts(chosen.items) == {"win": 8, "contested": 2, "wound": 1}
        by_key = {i.key: i for i in chosen.items}
        assert pinned <= set(by_key)
        assert all(by_key[k].pinned and by_key[k].inclusion_probability == 1.0 for k in pinned)
        assert sum(i.pinned for i in chosen.items) == 3
    # more pins than the quota: every pin is in, nothing is drawn
    chosen = select(pooled, clusters, {"win": 2}, seed=0, pinned=pinned)
    assert {i.key for i in chosen.items} == pinned


def test_same_seed_same_selection() -> None:
    pooled, clusters = make_pool(SPEC)
    sizes = {"win": 10, "contested": 4, "wound": 2}
    first = select(pooled, clusters, sizes, seed=42)
    assert select(pooled, clusters, sizes, seed=42).items == first.items
    assert select(list(pooled), list(clusters), dict(sizes), seed=42).items == first.items
    others = {tuple(i.key for i in select(pooled, clusters, sizes, seed=s).items) for s in range(10)}
    assert len(others) > 1


def test_weights_are_count_over_probability() -> None:
    pooled, clusters = make_pool(SPEC)
    counts = {p.candidate.key: p.count for p in pooled}
    chosen = select(pooled, clusters, {"win": 10, "contested": 4, "wound": 2}, seed=3)
    for item in chosen.items:
        assert item.count == counts[item.key]
        assert item.weight == pytest.approx(item.count / item.inclusion_probability)


SPARSE: dict[Stratum, list[int]] = {"win": [2, 5, 10, 30], "contested": [1, 4, 4], "wound": [1, 1, 2, 3, 6]}


@pytest.mark.parametrize(
    ("spec", "sizes"),
    [
        (SPEC, {"win": 12, "contested": 5, "wound": 3}),  # quotas at least the clusters
        (SPARSE, {"win": 7, "contested": 4, "wound": 3}),  # fewer picks than clusters, odd remainders
    ],
)
def test_inclusion_probabilities_match_selection_frequencies_by_simulation(
    spec: dict[Stratum, list[int]], sizes: dict[Stratum, int]
) -> None:
    pooled, clusters = make_pool(spec)
    pinned = frozenset({pooled[3].candidate.key})  # one of the win stratum's second cluster
    runs = 3000
    hits: Counter[str] = Counter()
    stated: dict[str, float] = {}
    totals: dict[str, list[float]] = {s: [] for s in STRATA}
    for seed in range(runs):
        chosen = select(pooled, clusters, sizes, seed=seed, pinned=pinned)
        for item in chosen.items:
            hits[item.key] += 1
            assert stated.setdefault(item.key, item.inclusion_probability) == item.inclusion_probability
        for stratum in STRATA:
            totals[stratum].append(sum(i.weight for i in chosen.items if i.stratum == stratum))
    assert set(stated) == {p.candidate.key for p in pooled}  # every question can be drawn
    assert len({round(p, 6) for p in stated.values()}) >= 4  # and the design is not uniform
    for key, probability in stated.items():
        tolerance = 4 * math.sqrt(probability * (1 - probability) / runs) + 1e-9
        assert abs(hits[key] / runs - probability) <= tolerance, (key, hits[key] / runs, probability)
    # Horvitz-Thompson: the weights add up, on average, to the requests each stratum stands for
    for stratum in STRATA:
        true_total = sum(p.count for p in pooled if p.stratum == stratum)
        assert np.mean(totals[stratum]) == pytest.approx(true_total, rel=0.03)


# --- weighted share, diff, record ---------------------------------------------------------------------------


def set_item(
    question: str, stratum: Stratum, probability: float, count: int, pinned: bool = False
) -> SetItem:
    c = cand(question)
    return SetItem(
        key=c.key,
        stratum=stratum,
        candidate=c,
        cluster=0,
        inclusion_probability=probability,
        count=count,
        weight=count / probability,
        pinned=pinned,
    )


def test_weighted_share_by_hand() -> None:
    items = [set_item("a", "win", 0.5, 1), set_item("b", "win", 0.25, 2), set_item("c", "win", 1.0, 4)]
    a, b, c = (i.key for i in items)
    # weights 2, 8, 4: hits on a and c -> (2 + 4) / 14
    assert weighted_share(items, {a: True, b: False, c: True}) == pytest.approx(6 / 14)
    assert weighted_share(items, {b: True, c: False}) == pytest.approx(8 / 12)  # a has no outcome: left out
    assert weighted_share(items, {}) is None
    # unweighted, a and c would be 2 of 3; the weights pull it towards b's share of traffic
    assert weighted_share(items, {a: True, b: False, c: True}) != pytest.approx(2 / 3)


def test_diff_sets() -> None:
    old = [set_item("a", "win", 1, 1), set_item("b", "wound", 1, 1), set_item("c", "contested", 1, 1)]
    new = [set_item("a", "win", 1, 1), set_item("b", "win", 1, 1), set_item("d", "wound", 1, 1)]
    keys = {i.candidate.question: i.key for i in old + new}
    assert diff_sets(old, new) == {
        "added": [keys["d"]],
        "removed": [keys["c"]],
        "moved": [f"{keys['b']}: wound -> win"],
    }
    assert diff_sets(new, new) == {"added": [], "removed": [], "moved": []}


def test_as_pinned_and_inputs_digest_and_shortfall() -> None:
    pinned = as_pinned(set_item("a", "win", 0.25, 3))
    assert (pinned.pinned, pinned.inclusion_probability, pinned.weight) == (True, 1.0, 3.0)
    a, b = cand("a", source_id="1"), cand("b", source_id="2")
    assert inputs_digest([a, b]) == inputs_digest([b, a]) != inputs_digest([a])
    record = RegressionSetRecord(
        id="rs_x",
        version=1,
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        recipe={"sizes": {"win": 80, "contested": 60, "wound": 60}},
        counts={"win": 80, "contested": 12, "wound": 0},
    )
    assert record.shortfall() == {"contested": 48, "wound": 60}
    assert record.label == "v1"
