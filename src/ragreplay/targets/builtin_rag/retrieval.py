"""Ranking steps of the built-in RAG as small pure functions over arrays and lists of chunk indices.

The pipeline (see ``index.py``): metadata filters -> per-retriever candidates (BM25, dense) -> reciprocal
rank fusion (hybrid) -> recency (newest version of each policy family) -> optional rerank -> top k.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date

import numpy as np

from ragreplay.targets.builtin_rag.corpus import Document

_TAG = re.compile(r"\{tags\.([^{}]+)\}")
RERANK_OVERLAP_WEIGHT = 0.1
"""Weight of the token-overlap term in the rerank score (cosine + weight * overlap)."""


def top_indices(
    scores: np.ndarray, allowed: np.ndarray, limit: int, positive_only: bool = False
) -> list[int]:
    """Indices of the ``limit`` best ``scores`` among ``allowed``, best first (ties: lower index first).

    With ``positive_only`` a score of 0 or less is no match (BM25: the chunk shares no term with the query).
    """
    keep = allowed & (scores > 0) if positive_only else allowed
    candidates = np.flatnonzero(keep)
    if candidates.size == 0:
        return []
    # A stable sort on the negated scores keeps ties in index order.
    order = np.argsort(-scores[candidates], kind="stable")[:limit]
    return [int(i) for i in candidates[order]]


def rrf_fuse(rankings: Sequence[Sequence[int]], k: int = 60) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each item scores ``sum(1 / (k + rank))`` over the rankings it is in (rank from 1).

    Best first; ties keep the order in which items were first seen (ranking by ranking).
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    first_seen = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))


def resolve_filters(filters: Mapping[str, str], tags: Mapping[str, str]) -> dict[str, str]:
    """Fill ``{tags.X}`` in filter values from the case's tags; a filter naming a missing tag is skipped."""
    resolved = {}
    for field, template in filters.items():
        names = _TAG.findall(template)
        if any(not str(tags.get(name, "")).strip() for name in names):
            continue
        resolved[field] = _TAG.sub(lambda m: str(tags[m.group(1)]).strip(), template)
    return resolved


def passes_filters(metadata: Mapping[str, str | tuple[str, ...]], filters: Mapping[str, str]) -> bool:
    """Whether a document passes: for every filter its field equals the value (case-insensitively), is a
    list holding it, or is absent (a company-wide document)."""
    for field, wanted in filters.items():
        value = metadata.get(field)
        if value is None:
            continue
        values = (value,) if isinstance(value, str) else value
        if wanted.casefold() not in {v.casefold() for v in values}:
            return False
    return True


def filter_mask(
    documents: Sequence[Document], chunk_docs: np.ndarray, filters: Mapping[str, str]
) -> np.ndarray:
    """Boolean mask over chunks: True where the chunk's document passes ``filters``."""
    doc_ok = np.array([passes_filters(d.metadata, filters) for d in documents], dtype=bool)
    return doc_ok[chunk_docs] if len(chunk_docs) else np.zeros(0, dtype=bool)


def drop_superseded(candidates: Sequence[int], doc_of: Callable[[int], Document]) -> tuple[list[int], int]:
    """Keep only the newest version of each policy family among ``candidates`` (order kept).

    A candidate goes when another candidate's document of the same ``policy`` has a later
    ``effective_date`` (an undated version counts as older than any dated one), or when another
    candidate's document lists it in ``supersedes``. Returns the kept candidates and how many went.
    """
    docs = {doc_of(c).id: doc_of(c) for c in candidates}
    newest: dict[str, date] = {}
    replaced: set[str] = set()
    for doc in docs.values():
        replaced.update(s for s in doc.supersedes if s != doc.id)
        if doc.policy is not None and doc.effective_date is not None:
            newest[doc.policy] = max(newest.get(doc.policy, doc.effective_date), doc.effective_date)

    def current(doc: Document) -> bool:
        if doc.id in replaced:
            return False
        if doc.policy is None or doc.policy not in newest:
            return True
        return doc.effective_date is not None and doc.effective_date >= newest[doc.policy]

    kept = [c for c in candidates if current(doc_of(c))]
    return kept, len(candidates) - len(kept)


def token_overlap(query_tokens: set[str], chunk_tokens: set[str]) -> float:
    """Share of the query's tokens that the chunk contains (0 when the query has none)."""
    return len(query_tokens & chunk_tokens) / len(query_tokens) if query_tokens else 0.0


def rerank(
    candidates: Sequence[int],
    cosines: np.ndarray,
    overlaps: Sequence[float],
    weight: float = RERANK_OVERLAP_WEIGHT,
) -> list[tuple[int, float]]:
    """Re-score candidates by ``cosine + weight * overlap`` (bi-encoder similarity, not a cross-encoder).

    ``cosines`` and ``overlaps`` are aligned with ``candidates``. Best first; ties keep the incoming order.
    """
    scored = [(c, float(cosines[i]) + weight * overlaps[i]) for i, c in enumerate(candidates)]
    return sorted(scored, key=lambda pair: -pair[1])
