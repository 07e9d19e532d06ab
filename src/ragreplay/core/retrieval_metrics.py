"""Retrieval metrics on chunk ids: precision@k, recall@k, hit rate@k, reciprocal rank, average precision and
nDCG@k, per query and averaged, following trec_eval's conventions (checked against it on Cranfield in the tests).

A ranking is the retrieved chunk ids, best first (a repeated id counts once, where it first appears). Judgments
map a query's chunk ids to a graded relevance; an unjudged chunk is not relevant. A chunk is relevant when its
grade is at least ``min_relevance`` (1 by default). nDCG's gain is the grade itself (trec_eval's linear gain) or
``2**grade - 1`` (``gain="exponential"``), discounted by ``log2(rank + 1)`` and divided by the ideal DCG of the
query's judged chunks; a query with no relevant chunk scores 0 on every metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Gain = Literal["linear", "exponential"]
Judgments = Mapping[str, int]
"""One query's graded relevance per chunk id."""

_METRIC = re.compile(r"^(P|R|Hit|nDCG|MRR|MAP)(?:@(\d+))?$")


def _unique(ranking: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def _relevant(judged: Judgments, min_relevance: int) -> set[str]:
    return {doc for doc, grade in judged.items() if grade >= min_relevance}


def precision_at(ranking: Sequence[str], judged: Judgments, k: int, min_relevance: int = 1) -> float:
    """Relevant chunks among the first ``k`` retrieved, over ``k`` (fewer retrieved still divides by ``k``)."""
    relevant = _relevant(judged, min_relevance)
    return sum(doc in relevant for doc in _unique(ranking)[:k]) / k


def recall_at(ranking: Sequence[str], judged: Judgments, k: int, min_relevance: int = 1) -> float:
    """Relevant chunks among the first ``k`` retrieved, over all relevant chunks of the query."""
    relevant = _relevant(judged, min_relevance)
    if not relevant:
        return 0.0
    return sum(doc in relevant for doc in _unique(ranking)[:k]) / len(relevant)


def hit_at(ranking: Sequence[str], judged: Judgments, k: int, min_relevance: int = 1) -> float:
    """1 when a relevant chunk is among the first ``k`` retrieved, else 0."""
    relevant = _relevant(judged, min_relevance)
    return float(any(doc in relevant for doc in _unique(ranking)[:k]))


def reciprocal_rank(
    ranking: Sequence[str], judged: Judgments, k: int | None = None, min_relevance: int = 1
) -> float:
    """One over the rank of the first relevant chunk (within the first ``k`` when given), else 0."""
    relevant = _relevant(judged, min_relevance)
    for rank, doc in enumerate(_unique(ranking)[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def average_precision(ranking: Sequence[str], judged: Judgments, min_relevance: int = 1) -> float:
    """The mean of the precision at each relevant chunk retrieved, over all relevant chunks of the query."""
    relevant = _relevant(judged, min_relevance)
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for rank, doc in enumerate(_unique(ranking), start=1):
        if doc in relevant:
            found += 1
            total += found / rank
    return total / len(relevant)


def _gain(grade: int, gain: Gain) -> float:
    if grade <= 0:
        return 0.0
    return float(grade) if gain == "linear" else 2.0**grade - 1.0


def ndcg_at(ranking: Sequence[str], judged: Judgments, k: int, gain: Gain = "linear") -> float:
    """DCG of the first ``k`` retrieved over the ideal DCG of the query's judged chunks (0 when nothing is
    relevant)."""
    ideal_gains = sorted((_gain(g, gain) for g in judged.values()), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_gains, start=1))
    if ideal == 0:
        return 0.0
    dcg = sum(
        _gain(judged.get(doc, 0), gain) / math.log2(rank + 1)
        for rank, doc in enumerate(_unique(ranking)[:k], start=1)
    )
    return dcg / ideal


def metric_value(
    name: str, ranking: Sequence[str], judged: Judgments, min_relevance: int = 1, gain: Gain = "linear"
) -> float:
    """One metric by name: ``P@k``, ``R@k``, ``Hit@k``, ``nDCG@k``, ``MRR`` (or ``MRR@k``) or ``MAP``."""
    match = _METRIC.match(name)
    if match is None:
        raise ValueError(f"unknown retrieval metric {name!r}: use P@k, R@k, Hit@k, nDCG@k, MRR, MRR@k or MAP")
    kind, cut = match.group(1), match.group(2)
    k = int(cut) if cut is not None else None
    if kind in ("P", "R", "Hit", "nDCG") and not k:
        raise ValueError(f"{name!r} needs a cut-off, e.g. {kind}@10")
    if kind == "P":
        return precision_at(ranking, judged, k or 0, min_relevance)
    if kind == "R":
        return recall_at(ranking, judged, k or 0, min_relevance)
    if kind == "Hit":
        return hit_at(ranking, judged, k or 0, min_relevance)
    if kind == "nDCG":
        return ndcg_at(ranking, judged, k or 0, gain)
    if kind == "MRR":
        return reciprocal_rank(ranking, judged, k, min_relevance)
    if k is not None:
        raise ValueError("MAP takes no cut-off")
    return average_precision(ranking, judged, min_relevance)


@dataclass(frozen=True)
class RetrievalScores:
    """Per-query values of each metric and their means over the judged queries."""

    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    queries: int = 0


def evaluate_retrieval(
    rankings: Mapping[str, Sequence[str]],
    judgments: Mapping[str, Judgments],
    metrics: Sequence[str] = ("P@5", "R@10", "Hit@5", "MRR", "nDCG@10", "MAP"),
    min_relevance: int = 1,
    gain: Gain = "linear",
) -> RetrievalScores:
    """Every metric for every judged query (a judged query with no ranking retrieved nothing) and the means
    over the judged queries; rankings of unjudged queries are left out, as trec_eval does."""
    per_query = {
        query: {m: metric_value(m, rankings.get(query, ()), judged, min_relevance, gain) for m in metrics}
        for query, judged in judgments.items()
    }
    n = len(per_query)
    means = {m: (sum(v[m] for v in per_query.values()) / n if n else 0.0) for m in metrics}
    return RetrievalScores(per_query=per_query, means=means, queries=n)
