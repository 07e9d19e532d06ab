"""The regression set's two-phase design: a large stratum is sampled before anything is compared, and the
weights stay unbiased (checked by simulation against the window's true totals); the matrix-product
near-duplicate and cluster passes equal the one-pair-at-a-time definitions they replace."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from ragreplay.core.regset import (
    PHASE_ONE_MIN,
    STRATA,
    Candidate,
    Pooled,
    Stratum,
    leader_clusters,
    merge_near_duplicates,
    phase_one_size,
    select,
    subsample,
)


def cand(question: str, **fields: Any) -> Candidate:
    return Candidate(question=question, source="shadow", source_id=f"row-{question}", **fields)


def population(sizes: dict[Stratum, int], clusters: int = 12) -> tuple[list[Pooled], np.ndarray]:
    """Questions per stratum, each near one of ``clusters`` directions, standing for 1 to 5 requests."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(clusters, 16))
    pooled: list[Pooled] = []
    rows: list[np.ndarray] = []
    for stratum, n in sizes.items():
        for i in range(n):
            centre = centres[(i * 7 + len(stratum)) % clusters]
            vector = centre + rng.normal(scale=0.15, size=16)
            rows.append(vector / np.linalg.norm(vector))
            pooled.append(Pooled(stratum, cand(f"{stratum} q{i}"), 1 + (i * 13) % 5))
    return pooled, np.asarray(rows, dtype=np.float32)


def test_small_strata_are_kept_whole() -> None:
    pooled, _ = population({"win": 40, "contested": PHASE_ONE_MIN, "wound": 3})
    kept = subsample(pooled, {"win": 80, "contested": 10, "wound": 60}, seed=1)
    assert kept == pooled
    assert all(p.phase_one == 1.0 for p in kept)


def test_a_large_stratum_is_sampled_to_its_phase_one_size_and_pins_stay() -> None:
    pooled, _ = population({"win": 2_000, "wound": 30})
    pins = frozenset({pooled[5].candidate.key, pooled[1_999].candidate.key})
    sizes: dict[Stratum, int] = {"win": 80, "wound": 60}
    kept = subsample(pooled, sizes, seed=3, keep=pins)
    wins = [p for p in kept if p.stratum == "win"]
    assert phase_one_size(80) == 800
    assert len(wins) == 800 + 2
    assert {p.candidate.key for p in wins} >= pins
    assert all(p.phase_one == 1.0 for p in wins if p.candidate.key in pins)
    assert all(p.phase_one == pytest.approx(800 / 1_998) for p in wins if p.candidate.key not in pins)
    assert [p for p in kept if p.stratum == "wound"] == pooled[2_000:]
    order = {p.candidate.key: i for i, p in enumerate(pooled)}
    assert [order[p.candidate.key] for p in kept] == sorted(order[p.candidate.key] for p in kept)
    assert subsample(pooled, sizes, seed=3, keep=pins) == kept
    assert subsample(pooled, sizes, seed=4, keep=pins) != kept


def _build(pooled: list[Pooled], vectors: np.ndarray, sizes: dict[Stratum, int], seed: int) -> list[Any]:
    """What compute_items does after pooling: phase one, near duplicates, clusters, the quota's draw."""
    kept = subsample(pooled, sizes, seed)
    row = {p.candidate.key: i for i, p in enumerate(pooled)}
    kept_vectors = vectors[[row[p.candidate.key] for p in kept]]
    merged = merge_near_duplicates(kept, kept_vectors, 0.995)
    merged_vectors = vectors[[row[p.candidate.key] for p in merged]]
    return select(merged, leader_clusters(merged_vectors, 0.9), sizes, seed).items


def test_weights_estimate_the_windows_requests_without_bias() -> None:
    # Horvitz-Thompson over the set: the mean of sum(weight) over many seeds is each stratum's true request
    # count, although phase two's clusters are drawn on phase one's sample
    sizes: dict[Stratum, int] = {"win": 8, "contested": 5, "wound": 60}
    pooled, vectors = population({"win": 900, "contested": 60, "wound": 700})
    truth = {s: sum(p.count for p in pooled if p.stratum == s) for s in STRATA}
    seeds = 150
    totals = {s: 0.0 for s in STRATA}
    for seed in range(seeds):
        for item in _build(pooled, vectors, sizes, seed):
            totals[item.stratum] += item.weight
    for stratum in ("win", "contested", "wound"):
        assert totals[stratum] / seeds == pytest.approx(truth[stratum], rel=0.06), stratum
    # a stratum phase one sampled states probabilities below its phase-two share
    items = _build(pooled, vectors, sizes, 0)
    wins = [i for i in items if i.stratum == "win"]
    assert all(0 < i.inclusion_probability <= 500 / 900 for i in wins)


def _merge_pairwise(pooled: list[Pooled], vectors: np.ndarray, threshold: float) -> list[tuple[str, int]]:
    """The definition, one pair at a time: a question merges into the first kept one of its stratum."""
    kept: list[int] = []
    counts: dict[int, int] = {}
    for i, item in enumerate(pooled):
        target = next(
            (
                j
                for j in kept
                if pooled[j].stratum == item.stratum and float(vectors[i] @ vectors[j]) >= threshold
            ),
            None,
        )
        if target is None:
            kept.append(i)
            counts[i] = item.count
        else:
            counts[target] += item.count
    return [(pooled[i].candidate.key, counts[i]) for i in kept]


def _clusters_pairwise(vectors: np.ndarray, threshold: float) -> list[int]:
    leaders: list[int] = []
    labels: list[int] = []
    for i in range(len(vectors)):
        for number, leader in enumerate(leaders):
            if float(vectors[i] @ vectors[leader]) >= threshold:
                labels.append(number)
                break
        else:
            leaders.append(i)
            labels.append(len(leaders) - 1)
    return labels


@pytest.mark.parametrize("seed", range(5))
def test_matrix_passes_equal_the_pairwise_definitions(seed: int) -> None:
    rng = random.Random(seed)
    pooled, vectors = population({"win": 150, "contested": 40, "wound": 90}, clusters=6 + seed)
    order = list(range(len(pooled)))
    rng.shuffle(order)
    pooled = [pooled[i] for i in order]
    vectors = vectors[order]
    for threshold in (0.9, 0.97, 0.995):
        got = merge_near_duplicates(pooled, vectors, threshold)
        assert [(p.candidate.key, p.count) for p in got] == _merge_pairwise(pooled, vectors, threshold)
        assert leader_clusters(vectors, threshold) == _clusters_pairwise(vectors, threshold)
