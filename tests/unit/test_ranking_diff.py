"""core/ranking_diff: gained, dropped and moved chunks, overlap@k, Jaccard, rank-biased overlap (checked against
hand computations), the document level and the aggregate over queries."""

from __future__ import annotations

import pytest

from ragreplay.core.ranking_diff import (
    aggregate_diffs,
    diff_rankings,
    document_of,
    rank_biased_overlap,
)


def test_gained_dropped_moved_and_overlap() -> None:
    d = diff_rankings(["a#1", "b#1", "c#1", "d#1"], ["b#1", "a#1", "e#1", "c#1"], k=4)
    assert d.gained == ["e#1"] and d.dropped == ["d#1"]
    assert [(m.id, m.old_rank, m.new_rank) for m in d.moved] == [("b#1", 2, 1), ("a#1", 1, 2), ("c#1", 3, 4)]
    assert d.overlap_at_k == pytest.approx(3 / 4)
    assert d.jaccard == pytest.approx(3 / 5)
    assert d.top1_changed


def test_only_the_first_k_count_and_repeats_count_once() -> None:
    d = diff_rankings(["a", "a", "b", "z"], ["a", "b", "y"], k=2)
    assert d.old == ["a", "b"] and d.new == ["a", "b"]
    assert d.overlap_at_k == 1.0 and d.rbo == pytest.approx(1.0) and not d.top1_changed


def test_identical_short_lists_overlap_fully_and_empty_lists() -> None:
    assert diff_rankings(["a", "b"], ["a", "b"], k=10).overlap_at_k == 1.0
    both_empty = diff_rankings([], [], k=5)
    assert both_empty.overlap_at_k == 1.0 and both_empty.jaccard == 1.0 and both_empty.rbo == 1.0
    one_empty = diff_rankings(["a"], [], k=5)
    assert one_empty.overlap_at_k == 0.0 and one_empty.rbo == 0.0 and one_empty.dropped == ["a"]


def test_rbo_by_hand() -> None:
    # depth 2, p=0.9: X1 = 0, X2 = 2 -> (2/2)*0.81 + (0.1/0.9)*(0 + (2/2)*0.81) = 0.81 + 0.09
    assert rank_biased_overlap(["a", "b"], ["b", "a"]) == pytest.approx(0.9)
    assert rank_biased_overlap(["a", "b", "c"], ["x", "y", "z"]) == 0.0
    assert rank_biased_overlap(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    # a swap at the top costs more than one at the bottom
    top = rank_biased_overlap(["a", "b", "c", "d"], ["b", "a", "c", "d"])
    bottom = rank_biased_overlap(["a", "b", "c", "d"], ["a", "b", "d", "c"])
    assert top < bottom < 1.0


def test_document_level() -> None:
    assert document_of("bonus-2025-en#3") == "bonus-2025-en" and document_of("plain") == "plain"
    assert document_of("#3") == "#3"
    d = diff_rankings(["x#1", "x#2", "y#1"], ["x#3", "z#1"], k=3)
    assert d.gained_docs == ["z"] and d.dropped_docs == ["y"]
    assert d.doc_jaccard == pytest.approx(1 / 3)
    assert d.jaccard == 0.0


def test_aggregate() -> None:
    diffs = [
        diff_rankings(["a#1", "b#1"], ["a#1", "b#1"], k=2),
        diff_rankings(["a#1", "b#1"], ["c#1", "a#1"], k=2),
        diff_rankings(["b#1"], ["c#1"], k=2),
    ]
    agg = aggregate_diffs(diffs, k=2)
    assert agg.queries == 3
    assert agg.mean_overlap_at_k == pytest.approx((1 + 0.5 + 0) / 3)
    assert agg.top1_changed.k == 2 and agg.top1_changed.n == 3
    assert agg.identical.k == 1
    share = agg.top1_changed.value
    assert share is not None and 0 < agg.top1_changed.low < share < agg.top1_changed.high
    assert [(c.id, c.queries) for c in agg.most_gained_chunks] == [("c#1", 2)]
    assert [(c.id, c.queries) for c in agg.most_dropped_chunks] == [("b#1", 2)]
    assert [(c.id, c.queries) for c in agg.most_gained_docs] == [("c", 2)]
    empty = aggregate_diffs([], k=2)
    assert empty.mean_rbo is None and empty.top1_changed.value is None


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        diff_rankings(["a"], ["a"], k=0)
