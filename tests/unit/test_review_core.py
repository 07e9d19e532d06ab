"""Review core: the taxonomy, side mapping, kappa and alpha against reference implementations, calibration."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from pydantic import ValidationError
from sklearn.metrics import cohen_kappa_score

from ragreplay.core.review import (
    BUILTIN_FAILURE_TAGS,
    AlertPolicy,
    JudgeDecision,
    Review,
    ReviewItem,
    ReviewSide,
    calibrate,
    cohen_kappa,
    inter_annotator,
    krippendorff_alpha,
    majority,
    min_labels_for,
    taxonomy,
)
from ragreplay.core.stats import wilson_interval

LABELS = ["champion", "challenger", "tie"]


def test_taxonomy_is_versioned_by_its_sorted_tags() -> None:
    base = taxonomy()
    assert set(BUILTIN_FAILURE_TAGS) <= set(base.tags)
    assert base.tags == tuple(sorted(base.tags))
    team = taxonomy(["stale-table", "wrong-department"])
    assert team.version != base.version
    assert taxonomy(["wrong-department", "stale-table"]).version == team.version
    assert taxonomy(["wrong-version"]).version == base.version  # a built-in tag adds nothing
    assert team.check(["stale-table", "nope"]) == ["nope"]
    with pytest.raises(ValueError, match="Bad Tag"):
        taxonomy(["Bad Tag"])


def _review(reviewer: str, key: str, a_side: str, choice: str, **kw: object) -> Review:
    return Review.model_validate(
        {"reviewer": reviewer, "item_key": key, "a_side": a_side, "choice": choice, **kw}
    )


def test_review_maps_the_shown_order_back_to_champion_and_challenger() -> None:
    assert _review("ann", "k", "champion", "A").winner == "champion"
    assert _review("ann", "k", "challenger", "A").winner == "challenger"
    assert _review("ann", "k", "challenger", "B").winner == "champion"
    assert _review("ann", "k", "champion", "tie").winner == "tie"
    r = _review("ann", "k", "challenger", "A", scores_a={"recency": 5}, scores_b={"recency": 2})
    assert r.scores("challenger") == {"recency": 5}
    assert r.scores("champion") == {"recency": 2}
    with pytest.raises(ValidationError):
        _review("ann", "k", "champion", "A", scores_a={"recency": 6})
    with pytest.raises(ValidationError):
        _review("ann", "k", "champion", "C")
    with pytest.raises(ValidationError):
        _review("ann", "k", "champion", "A", failure_tags=["wrong-version", "wrong-version"])


def test_item_sides_follow_the_order() -> None:
    item = ReviewItem(
        key="k",
        source="calibration",
        question="q",
        champion=ReviewSide(answer="old"),
        challenger_side=ReviewSide(answer="new"),
    )
    a, b = item.sides("challenger")
    assert (a.answer, b.answer) == ("new", "old")


# Cohen's kappa: sklearn.metrics.cohen_kappa_score is the reference.
@pytest.mark.parametrize("seed", range(12))
def test_cohen_kappa_matches_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 60)
    a = [rng.choice(LABELS) for _ in range(n)]
    b = [x if rng.random() < 0.6 else rng.choice(LABELS) for x in a]
    expected = cohen_kappa_score(a, b)
    if np.isnan(expected):
        assert cohen_kappa(a, b) is None
    else:
        assert cohen_kappa(a, b) == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_edges() -> None:
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["tie", "tie"], ["tie", "tie"]) is None  # chance agreement is 1: undefined
    assert cohen_kappa(["a", "b"], ["a", "b"]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


def _reference_alpha(units: list[list[str | None]]) -> float:
    codes = {label: i for i, label in enumerate(sorted({v for u in units for v in u if v is not None}))}
    width = max(len(u) for u in units)
    # krippendorff wants raters x units, with nan for a missing label.
    data = np.full((width, len(units)), np.nan)
    for u, unit in enumerate(units):
        for r, v in enumerate(unit):
            if v is not None:
                data[r, u] = codes[v]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


# Krippendorff's alpha (nominal, missing data): the krippendorff package is the reference.
@pytest.mark.parametrize("seed", range(12))
def test_krippendorff_alpha_matches_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    raters = rng.randint(2, 5)
    units: list[list[str | None]] = []
    for _ in range(rng.randint(5, 40)):
        truth = rng.choice(LABELS)
        units.append(
            [
                None if rng.random() < 0.3 else (truth if rng.random() < 0.7 else rng.choice(LABELS))
                for _ in range(raters)
            ]
        )
    units.append(
        ["champion", "challenger"] + [None] * (raters - 2)
    )  # at least two values and one pairable unit
    assert krippendorff_alpha(units) == pytest.approx(_reference_alpha(units), abs=1e-9)


def test_krippendorff_alpha_textbook_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units,
    # nominal data with missing values; alpha = 0.743.
    rows = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[None if r[u] is None else str(r[u]) for r in rows] for u in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([["a", "a"], ["a", None]]) is None  # one value only: undefined


def test_inter_annotator_on_overlapping_items() -> None:
    reviews = [
        _review("ann", "k1", "champion", "A"),
        _review("bob", "k1", "challenger", "B"),  # champion too
        _review("ann", "k2", "champion", "B"),
        _review("bob", "k2", "champion", "tie"),
        _review("ann", "k3", "champion", "A"),  # only one reviewer: no overlap
    ]
    ia = inter_annotator(reviews)
    assert ia.items == 2
    assert [(p.a, p.b, p.n, p.agreement.k) for p in ia.pairs] == [("ann", "bob", 2, 1)]
    assert ia.alpha == pytest.approx(_reference_alpha([["champion", "champion"], ["challenger", "tie"]]))


def test_min_labels_for_is_where_a_perfect_record_clears_the_bound() -> None:
    assert min_labels_for(0.80) == 16
    assert min_labels_for(0.70) == 9
    assert wilson_interval(15, 15)[0] < 0.80 <= wilson_interval(16, 16)[0]


def _item(
    key: str, winner: str | None, tags: dict[str, str] | None = None, **scores: dict[str, int]
) -> ReviewItem:
    return ReviewItem(
        key=key,
        source="calibration",
        question=f"question {key}",
        tags=tags or {},
        champion=ReviewSide(answer="a"),
        challenger_side=ReviewSide(answer="b"),
        judge=JudgeDecision.model_validate(
            {"judge": "local", "prompt_version": "p1", "winner": winner, **scores}
        ),
    )


def test_calibration_overall_per_tag_and_alerts() -> None:
    items = {}
    reviews = []
    # 20 items on two departments; the judge agrees with the humans on every hr item and on half the payroll ones.
    for i in range(20):
        dept = "hr" if i < 12 else "payroll"
        key = f"k{i}"
        items[key] = _item(key, "champion", {"dept": dept})
        human = "A" if dept == "hr" or i % 2 == 0 else "B"
        tags = ["wrong-version"] if dept == "payroll" else []
        reviews.append(_review("ann", key, "champion", human, failure_tags=tags))
    items["unscored"] = _item("unscored", None)
    reviews.append(_review("ann", "unscored", "champion", "A"))
    items["split"] = _item("split", "tie")
    reviews += [_review("ann", "split", "champion", "A"), _review("bob", "split", "champion", "B")]

    cal = calibrate(items, reviews)
    assert cal.overall.n == 20 and cal.overall.agreement.k == 16
    assert cal.judge_unscored == 1 and cal.humans_split == 1
    by_tag = {a.label: a for a in cal.per_tag}
    assert by_tag["dept=hr"].agreement.k == 12 and by_tag["dept=hr"].status == "ok"
    assert by_tag["dept=payroll"].n == 8 and by_tag["dept=payroll"].status == "not-enough-labels"
    assert [a.label for a in cal.per_failure_tag] == ["wrong-version"]
    assert cal.overall.status == "alert"  # 16/20: the lower bound is 0.58
    assert cal.status == "alert" and cal.alerts[0].label == "overall"
    assert cal.judges == ["local@p1"]
    # A lower minimum makes the payroll tag count, and it alerts too.
    cal = calibrate(items, reviews, AlertPolicy(min_n_tag=5))
    assert {a.label for a in cal.alerts} == {"overall", "dept=payroll", "wrong-version"}


def test_calibration_states_not_enough_and_ok() -> None:
    items = {f"k{i}": _item(f"k{i}", "challenger") for i in range(40)}
    few = [_review("ann", f"k{i}", "champion", "B") for i in range(5)]
    assert calibrate(items, few).status == "not-enough-labels"
    many = [_review("ann", f"k{i}", "challenger", "A") for i in range(40)]
    cal = calibrate(items, many)
    assert cal.status == "ok" and cal.overall.agreement.k == 40
    assert cal.overall.kappa is None  # one label on both sides: kappa undefined, agreement still counts


def test_calibration_per_axis_where_both_scored() -> None:
    items = {
        "k1": _item(
            "k1",
            "champion",
            scores_champion={"recency": 5, "directness": 3},
            scores_challenger={"recency": 2, "directness": 3},
        ),
        "k2": _item("k2", "champion", scores_champion={"recency": 4}, scores_challenger={"recency": 4}),
        "k3": _item("k3", "champion"),
    }
    reviews = [
        # challenger shown as A: scores_a are the challenger's.
        _review(
            "ann",
            "k1",
            "challenger",
            "B",
            scores_a={"recency": 1, "directness": 4},
            scores_b={"recency": 5, "directness": 2},
        ),
        _review("ann", "k2", "champion", "A", scores_a={"recency": 3}, scores_b={"recency": 3}),
        _review("ann", "k3", "champion", "A", scores_a={"recency": 3}, scores_b={"recency": 1}),
    ]
    cal = calibrate(items, reviews)
    axes = {a.label: (a.agreement.k, a.n) for a in cal.per_axis}
    assert axes == {"recency": (2, 2), "directness": (0, 1)}


def test_majority() -> None:
    assert majority(["champion", "champion", "tie"]) == "champion"
    assert majority(["champion", "tie"]) is None
    assert majority([]) is None
