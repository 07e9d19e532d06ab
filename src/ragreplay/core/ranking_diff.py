"""The difference between two rankings of chunk ids for one query, and over many queries.

Per query, on the first ``k`` ids of each ranking (a repeated id counts once, where it first appears):

- ``gained``: in the new top k, not in the old; ``dropped``: in the old top k, not in the new;
  ``moved``: in both at a different rank (old rank, new rank; ranks from 1);
- ``overlap@k``: shared ids / ``min(k, longer list)``, so two identical lists shorter than k score 1;
- ``jaccard``: shared ids / ids in either list;
- ``rbo``: rank-biased overlap (Webber, Moffat and Zobel 2010, extrapolated form) with persistence ``p``
  (0.9: the first ranks weigh most), evaluated at depth ``max(len)``; a missing rank is no agreement;
- the same at the document level (a chunk id ``doc#n`` belongs to document ``doc``): gained and dropped
  documents and their Jaccard.

Two empty lists are identical (every figure 1); one empty list against another shares nothing (0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.core.run_summary import RateValue

RBO_PERSISTENCE = 0.9
"""``p`` of rank-biased overlap: the weight of rank d is proportional to ``p ** (d - 1)``."""
TOP_COUNTS = 10
"""How many of the most often gained / dropped chunks and documents a summary lists."""


def document_of(chunk_id: str) -> str:
    """The document a chunk id belongs to: the part before the last ``#`` (the whole id without one)."""
    doc, sep, _ = chunk_id.rpartition("#")
    return doc if sep and doc else chunk_id


def top_ids(ranking: Iterable[str], k: int) -> list[str]:
    """The first ``k`` distinct ids of ``ranking``, in order."""
    return list(dict.fromkeys(ranking))[:k]


def rank_biased_overlap(old: Sequence[str], new: Sequence[str], p: float = RBO_PERSISTENCE) -> float:
    """Extrapolated rank-biased overlap of two rankings of distinct ids, at depth ``max(len)``."""
    depth = max(len(old), len(new))
    if depth == 0:
        return 1.0
    seen_old: set[str] = set()
    seen_new: set[str] = set()
    shared = 0
    total = 0.0
    for d in range(1, depth + 1):
        a = old[d - 1] if d <= len(old) else None
        b = new[d - 1] if d <= len(new) else None
        if a is not None and b is not None and a == b:
            shared += 1
        else:
            shared += (a is not None and a in seen_new) + (b is not None and b in seen_old)
        if a is not None:
            seen_old.add(a)
        if b is not None:
            seen_new.add(b)
        total += (shared / d) * p**d
    return (shared / depth) * p**depth + (1 - p) / p * total


class MovedChunk(BaseModel):
    """A chunk in both top-k lists at different ranks (from 1)."""

    model_config = ConfigDict(frozen=True)

    id: str
    old_rank: int
    new_rank: int


class RankingDiff(BaseModel):
    """How the new top k differs from the old one for one query (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    old: list[str]
    new: list[str]
    gained: list[str]
    dropped: list[str]
    moved: list[MovedChunk]
    overlap_at_k: float
    jaccard: float
    rbo: float
    top1_changed: bool
    gained_docs: list[str]
    dropped_docs: list[str]
    doc_jaccard: float


def _jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def diff_rankings(old: Sequence[str], new: Sequence[str], k: int) -> RankingDiff:
    """The difference between the first ``k`` ids of ``old`` and ``new``."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    a, b = top_ids(old, k), top_ids(new, k)
    set_a, set_b = set(a), set(b)
    rank_a = {cid: r for r, cid in enumerate(a, start=1)}
    rank_b = {cid: r for r, cid in enumerate(b, start=1)}
    longer = max(len(a), len(b))
    docs_a, docs_b = top_ids(map(document_of, a), k), top_ids(map(document_of, b), k)
    return RankingDiff(
        old=a,
        new=b,
        gained=[c for c in b if c not in set_a],
        dropped=[c for c in a if c not in set_b],
        moved=[
            MovedChunk(id=c, old_rank=rank_a[c], new_rank=rank_b[c])
            for c in b
            if c in set_a and rank_a[c] != rank_b[c]
        ],
        overlap_at_k=len(set_a & set_b) / min(k, longer) if longer else 1.0,
        jaccard=_jaccard(set_a, set_b),
        rbo=rank_biased_overlap(a, b),
        top1_changed=(a[:1] != b[:1]),
        gained_docs=[d for d in docs_b if d not in docs_a],
        dropped_docs=[d for d in docs_a if d not in docs_b],
        doc_jaccard=_jaccard(set(docs_a), set(docs_b)),
    )


class CountedId(BaseModel):
    """An id and how many queries it was gained or dropped in."""

    model_config = ConfigDict(frozen=True)

    id: str
    queries: int


class DiffAggregate(BaseModel):
    """The mean figures over the compared queries and the ids that changed most often."""

    model_config = ConfigDict(frozen=True)

    k: int
    queries: int
    mean_overlap_at_k: float | None
    mean_jaccard: float | None
    mean_rbo: float | None
    mean_doc_jaccard: float | None
    top1_changed: RateValue
    identical: RateValue
    most_gained_chunks: list[CountedId]
    most_dropped_chunks: list[CountedId]
    most_gained_docs: list[CountedId]
    most_dropped_docs: list[CountedId]


def _share(k: int, n: int) -> RateValue:
    return RateValue.of(k, n)


def _most(lists: Iterable[list[str]], limit: int) -> list[CountedId]:
    counts = Counter(i for ids in lists for i in ids)
    ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]
    return [CountedId(id=i, queries=n) for i, n in ranked]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate_diffs(diffs: Sequence[RankingDiff], k: int, limit: int = TOP_COUNTS) -> DiffAggregate:
    """Means of overlap@k, Jaccard, RBO and document Jaccard; the share of queries whose top 1 changed and of
    identical top-k lists (with intervals); the ``limit`` ids most often gained and dropped."""
    n = len(diffs)
    return DiffAggregate(
        k=k,
        queries=n,
        mean_overlap_at_k=_mean([d.overlap_at_k for d in diffs]),
        mean_jaccard=_mean([d.jaccard for d in diffs]),
        mean_rbo=_mean([d.rbo for d in diffs]),
        mean_doc_jaccard=_mean([d.doc_jaccard for d in diffs]),
        top1_changed=_share(sum(d.top1_changed for d in diffs), n),
        identical=_share(sum(d.old == d.new for d in diffs), n),
        most_gained_chunks=_most((d.gained for d in diffs), limit),
        most_dropped_chunks=_most((d.dropped for d in diffs), limit),
        most_gained_docs=_most((d.gained_docs for d in diffs), limit),
        most_dropped_docs=_most((d.dropped_docs for d in diffs), limit),
    )
