"""The regression set, pure: which stratum a question belongs to, and a stratified sample across clusters.

A *candidate* is one question seen in the window (a shadow row or a replayed case) with what is known of it:
the user's label, the judges' decisions, the champion's scores. :func:`classify` puts it in one stratum:

- ``wound``: a known failure not fixed yet: the user disliked the answer, a reviewer marked it wrong (tagged
  its failure, or wrote a correct answer that is not the champion's: a review has no verdict field, writing the
  correct answer is how a reviewer says the answer was wrong), an earlier gate left it open, or the champion
  scored 2 or less and the user did not like the answer;
- ``contested``: champion and challenger disagree and the judge was close (a tie, the two orders disagreeing,
  or a score margin under ``margin``), or the judge and the user disagree (the user liked the champion's
  answer but the judge preferred the challenger in both orders, or scored the champion 2 or less);
- ``win``: the user liked the answer, or the judge preferred the champion in both orders, or both sides agree
  and the champion scored 4 or more on every axis.

:func:`merge_near_duplicates` merges near-identical questions, :func:`leader_clusters` clusters the rest (on unit
vectors), and :func:`select` spreads each stratum's quota evenly over its clusters (the clusters that get one
pick more drawn at random), so frequent questions cannot crowd out rare ones. Every
selected item carries its cluster, its inclusion probability and its weight (requests it stands for divided by
that probability), so any aggregate over the set can be reweighted back to production traffic.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.ids import content_hash
from ragreplay.core.types import Feedback, Fit

if TYPE_CHECKING:  # only annotations: the store reads this module, and a run needs no numpy
    import numpy as np

Stratum = Literal["win", "contested", "wound"]
STRATA: tuple[Stratum, ...] = ("win", "contested", "wound")
DEFAULT_SIZES: dict[Stratum, int] = {"win": 80, "contested": 60, "wound": 60}
"""The requirement's mix: 200 questions = 80 wins, 60 contested, 60 open wounds."""

JudgeWinner = Literal["champion", "challenger", "tie"]
Source = Literal["shadow", "replay"]


class Candidate(BaseModel):
    """One question seen in the window, with what is known of the champion's answer to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source
    source_id: str
    """The shadow row id or the case id it came from."""
    request_id: str | None = None
    """The live request a shadow row answered (the rows of one request's challengers count as one request);
    ``None`` for a replayed case (it is its own request)."""
    challenger: str | None = None
    """The challenger the judges compared the champion with (shadow rows)."""
    question: str
    """The standalone question (a replayed case's pinned rewrite when it has one); already redacted."""
    tags: dict[str, str] = Field(default_factory=dict)
    champion_answer: str = ""
    champion_chunk_ids: list[str] = Field(default_factory=list)
    feedback: Feedback | None = None
    agreement: Fit | None = None
    """The FIT judge on champion vs challenger (shadow rows)."""
    judge_winner: JudgeWinner | None = None
    consistent: bool | None = None
    champion_score: float | None = None
    """Mean 1-5 axis score of the champion's answer over the judged orders."""
    champion_min_axis: int | None = None
    challenger_score: float | None = None
    reference_answer: str | None = None
    """A reviewer's correct answer, when there is one."""
    failure_tag: str | None = None
    open_wound: bool = False
    """An earlier gate left this question failing."""
    count: int = 1
    """How many production requests it stands for (merged duplicates add up)."""

    @property
    def key(self) -> str:
        """The item key: a hash of the normalised question (so the same question is one item)."""
        return question_key(self.question)

    @property
    def request(self) -> tuple[str, str]:
        """What counts as one production request: ``(source, request id or source id)``."""
        return self.source, self.request_id or self.source_id


@lru_cache(maxsize=1 << 16)
def question_key(question: str) -> str:
    """The key of a question: ``q_`` and a hash of its normalised form (:func:`normalise`); recent questions'
    keys are remembered (a build asks for each candidate's key several times)."""
    return "q_" + content_hash(normalise(question))[:16]


def normalise(question: str) -> str:
    """Case-, accent-, punctuation- and space-insensitive form of a question (for exact dedupe)."""
    text = unicodedata.normalize("NFKD", question).encode("ascii", "ignore").decode().lower()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text)).strip()


def classify(c: Candidate, margin: float = 0.5) -> Stratum | None:
    """The stratum of one candidate (see the module docstring), or ``None`` when it fits none."""
    scored_low = c.champion_score is not None and c.champion_score <= 2
    liked = c.feedback == Feedback.GOOD
    # a review has no verdict: a failure tag, or a correct answer other than the champion's, says it was wrong
    corrected = c.reference_answer is not None and normalise(c.reference_answer) != normalise(
        c.champion_answer
    )
    reviewed_wrong = c.failure_tag is not None or corrected
    if c.open_wound or c.feedback == Feedback.BAD or reviewed_wrong or (scored_low and not liked):
        return "wound"
    close_call = (
        c.judge_winner == "tie"
        or c.consistent is False
        or (
            c.champion_score is not None
            and c.challenger_score is not None
            and abs(c.champion_score - c.challenger_score) < margin
        )
    )
    user_disagrees = liked and ((c.judge_winner == "challenger" and c.consistent is True) or scored_low)
    if (c.agreement == Fit.NO_FIT and close_call) or user_disagrees:
        return "contested"
    agreed_high = c.agreement == Fit.FIT and c.champion_min_axis is not None and c.champion_min_axis >= 4
    if liked or (c.judge_winner == "champion" and c.consistent is True) or agreed_high:
        return "win"
    return None


_PRIORITY: dict[Stratum, int] = {"wound": 0, "contested": 1, "win": 2}


@dataclass(frozen=True)
class Pooled:
    """A deduped question in its stratum: the representative candidate and the keys merged into it."""

    stratum: Stratum
    candidate: Candidate
    count: int
    merged: tuple[str, ...] = ()
    phase_one: float = 1.0
    """The probability that phase one (:func:`subsample`) kept this question: 1 when its stratum was small."""


def pool(
    candidates: Iterable[Candidate],
    margin: float = 0.5,
    dropped: frozenset[str] = frozenset(),
    graduated: frozenset[str] = frozenset(),
) -> list[Pooled]:
    """One entry per question key: candidates of the same normalised question merge (their requests add up,
    each request once however many challengers' rows it has), and the question takes the most pressing
    stratum any of its candidates has (wound, then contested, then win); among its candidates of that
    stratum, the first by (source, source id) stands for it.

    Keys in ``dropped`` and candidates that fit no stratum are left out. A key in ``graduated`` (a wound fixed
    in enough consecutive gates) is a win where it would be a wound. The order of ``candidates`` does not
    matter (:class:`Pooler` takes them one at a time)."""
    pooler = Pooler(margin, dropped, graduated)
    for c in candidates:
        pooler.add(c)
    return pooler.pooled()


class Pooler:
    """:func:`pool` one candidate at a time: it keeps, per question key, the candidate that stands for it and
    the requests it was asked in, so memory follows the distinct questions, not the rows read."""

    def __init__(
        self,
        margin: float = 0.5,
        dropped: frozenset[str] = frozenset(),
        graduated: frozenset[str] = frozenset(),
        keep: Callable[[Candidate], Candidate | None] | None = None,
    ) -> None:
        self.margin, self.dropped, self.graduated = margin, dropped, graduated
        self.keep = keep
        """What is kept of a candidate that stands for its question (default: all of it); a streamed build keeps
        nothing of a shadow row's (``None``) and reads the chosen ones again by id."""
        self._best: dict[str, tuple[int, str, str, Stratum, Candidate | None]] = {}
        self._requests: dict[str, dict[int, int]] = {}

    def add(self, c: Candidate) -> None:
        """Take one candidate in."""
        key = c.key
        if key in self.dropped:
            return
        stratum = classify(c, self.margin)
        if stratum is None:
            return
        if stratum == "wound" and key in self.graduated:
            stratum = "win"
        requests = self._requests.setdefault(key, {})
        request = hash(c.request)  # a request's hash, not its ids: memory (a collision is 1 in 2^64)
        requests[request] = max(requests.get(request, 0), c.count)
        rank = (_PRIORITY[stratum], c.source, c.source_id)
        kept = self._best.get(key)
        if kept is None or rank < kept[:3]:
            self._best[key] = (*rank, stratum, c if self.keep is None else self.keep(c))

    def pooled(self) -> list[Pooled]:
        """The pool so far, by key (every candidate kept whole: no ``keep``)."""
        return [
            Pooled(stratum, c, sum(self._requests[key].values()))
            for key, (*_, stratum, c) in sorted(self._best.items())
            if c is not None
        ]

    def entries(self) -> list[PoolEntry]:
        """The pool so far, by key, as :class:`PoolEntry` (what ``keep`` kept of each candidate, or ``None``)."""
        return [
            PoolEntry(key, stratum, sum(self._requests[key].values()), source, source_id, c)
            for key, (_, source, source_id, stratum, c) in sorted(self._best.items())
        ]


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """A pooled question as a streamed build keeps it: its key, stratum, requests, and the candidate standing
    for it by source and source id (``candidate``: what the pooler kept of it, ``None`` when it is to be read
    again)."""

    key: str
    stratum: Stratum
    count: int
    source: str
    source_id: str
    candidate: Candidate | None


class MultisetDigest:
    """A hash of a set of candidates that does not depend on the order they come in (the sum of each one's
    128-bit hash): what a streamed build read, without keeping it."""

    def __init__(self) -> None:
        self.total = 0
        self.count = 0

    def add(self, c: Candidate) -> None:
        """Count one candidate in (by key, source and source id)."""
        own = hashlib.sha256(f"{c.key}\0{c.source}\0{c.source_id}".encode()).digest()[:16]
        self.total = (self.total + int.from_bytes(own, "big")) % (1 << 128)
        self.count += 1

    def hexdigest(self) -> str:
        """32 hex digits (of the sum and the count)."""
        return hashlib.sha256(f"{self.total:032x}:{self.count}".encode()).hexdigest()[:32]


PHASE_ONE_PER_PICK = 10
"""Phase one keeps this many questions of a stratum per pick of its quota (e.g. 800 for 80 wins), drawn at
random, before any two questions are compared: the build's cost follows the quota, not the traffic."""
PHASE_ONE_MIN = 500
"""...and never fewer than this many: a stratum this small is taken whole (the exact build)."""


def phase_one_size(quota: int) -> int:
    """How many questions of a stratum with ``quota`` picks phase one keeps."""
    return max(PHASE_ONE_MIN, PHASE_ONE_PER_PICK * quota)


def subsample(
    pooled: Sequence[Pooled], sizes: Mapping[Stratum, int], seed: int, keep: frozenset[str] = frozenset()
) -> list[Pooled]:
    """Phase one of a two-phase design: in each stratum holding more than :func:`phase_one_size` questions
    (pinned ones aside), keep a simple random sample of that many (seeded), each with its probability
    ``kept / held`` in ``phase_one``; smaller strata, and pinned keys (``keep``), are kept whole.

    Near duplicates, clusters and the quota's draw (phase two) are then computed on what is kept, and an item's
    inclusion probability is ``phase_one`` times phase two's: the Horvitz-Thompson weights stay unbiased for
    production traffic (phase two is unbiased given the sample, phase one for the whole window), while the
    comparisons cost O(kept^2), not O(held^2). Order is kept."""
    chosen = phase_one([(p.candidate.key, p.stratum) for p in pooled], sizes, seed, keep)
    return [replace(p, phase_one=chosen[i]) for i, p in enumerate(pooled) if i in chosen]


def phase_one(
    questions: Sequence[tuple[str, Stratum]], sizes: Mapping[Stratum, int], seed: int, keep: frozenset[str]
) -> dict[int, float]:
    """:func:`subsample` on ``(key, stratum)`` pairs: the index of each question kept, with its phase-one
    probability (1 for a pinned key or a stratum kept whole)."""
    rng = random.Random(f"{seed}:phase-one")
    chosen = {i: 1.0 for i, (key, _) in enumerate(questions) if key in keep}
    for stratum in STRATA:
        free = [i for i, (key, s) in enumerate(questions) if s == stratum and key not in keep]
        wanted = phase_one_size(sizes.get(stratum, 0))
        if len(free) <= wanted:
            chosen.update((i, 1.0) for i in free)
        else:
            chosen.update((i, wanted / len(free)) for i in rng.sample(free, wanted))
    return chosen


class _Leaders:
    """Unit vectors kept so far, in order, for "the first of them with cosine >= t" asked once per new vector."""

    def __init__(self, dims: int, capacity: int) -> None:
        import numpy as np

        self.rows = np.zeros((max(capacity, 1), dims), dtype=np.float32)
        self.ids: list[int] = []

    def first_close(self, vector: np.ndarray, threshold: float) -> int | None:
        """The index (in order of adding) of the first kept vector with cosine >= ``threshold``, if any."""
        if not self.ids:
            return None
        hits = (self.rows[: len(self.ids)] @ vector) >= threshold
        first = int(hits.argmax())
        return first if bool(hits[first]) else None

    def add(self, vector: np.ndarray, ident: int) -> None:
        """Keep ``vector`` under ``ident``."""
        self.rows[len(self.ids)] = vector
        self.ids.append(ident)


def merge_near_duplicates(
    pooled: Sequence[Pooled],
    vectors: np.ndarray,
    threshold: float = 0.95,
    keep: frozenset[str] = frozenset(),
) -> list[Pooled]:
    """Merge questions of one stratum whose unit vectors have cosine >= ``threshold`` into the first of them
    (counts add, the merged keys are recorded). ``vectors[i]`` belongs to ``pooled[i]``. A key in ``keep``
    (a pinned question) is never merged into another one (others may merge into it). Each question is
    compared with the kept ones of its stratum in one matrix product."""
    if len(pooled) != len(vectors):
        raise ValueError("one vector per pooled question")
    dims = vectors.shape[1] if len(vectors) else 1
    leaders = {stratum: _Leaders(dims, sum(p.stratum == stratum for p in pooled)) for stratum in STRATA}
    kept: list[int] = []
    merged: dict[int, list[int]] = {}
    for i, item in enumerate(pooled):
        own = leaders[item.stratum]
        first = None if item.candidate.key in keep else own.first_close(vectors[i], threshold)
        if first is None:
            kept.append(i)
            merged[i] = []
            own.add(vectors[i], i)
        else:
            merged[own.ids[first]].append(i)
    return [
        replace(
            pooled[i],
            count=pooled[i].count + sum(pooled[j].count for j in merged[i]),
            merged=pooled[i].merged
            + tuple(k for j in merged[i] for k in (pooled[j].candidate.key, *pooled[j].merged)),
        )
        for i in kept
    ]


def leader_clusters(vectors: np.ndarray, threshold: float = 0.8) -> list[int]:
    """Cluster unit vectors in order: each joins the first cluster whose leader has cosine >= ``threshold``
    with it, else it leads a new one. Deterministic for a given order; returns a cluster number per row."""
    leaders = _Leaders(vectors.shape[1] if len(vectors) else 1, len(vectors))
    labels: list[int] = []
    for i in range(len(vectors)):
        first = leaders.first_close(vectors[i], threshold)
        if first is None:
            leaders.add(vectors[i], i)
            first = len(leaders.ids) - 1
        labels.append(first)
    return labels


def water_level(sizes: Sequence[int], quota: int) -> tuple[int, int]:
    """``(level, extra)`` of spreading ``quota`` picks over clusters of ``sizes`` as evenly as possible: every
    cluster gets ``min(size, level)`` picks, and ``extra`` more picks go, one each, to ``extra`` of the clusters
    holding more than ``level`` (there are always more such clusters than ``extra``)."""
    target = min(quota, sum(sizes))
    low, high = 0, max(sizes, default=0)
    while low < high:  # the highest level whose picks fit in the quota
        mid = (low + high + 1) // 2
        if sum(min(s, mid) for s in sizes) <= target:
            low = mid
        else:
            high = mid - 1
    return low, target - sum(min(s, low) for s in sizes)


def allocate(sizes: Sequence[int], quota: int, rng: random.Random | None = None) -> list[int]:
    """Spread ``quota`` picks over clusters of ``sizes`` as evenly as possible (water filling): no cluster
    gets more than it holds, and a cluster gets more than another only when that one is exhausted, or by the
    one extra pick of :func:`water_level`. The extra picks go to clusters drawn by ``rng`` (uniformly among
    those above the level), or to the first of them without ``rng``."""
    level, extra = water_level(sizes, quota)
    picks = [min(s, level) for s in sizes]
    above = [i for i, s in enumerate(sizes) if s > level]
    for i in rng.sample(above, extra) if rng is not None else above[:extra]:
        picks[i] += 1
    return picks


def cluster_probability(size: int, sizes: Sequence[int], quota: int) -> float:
    """The inclusion probability of each question of a cluster of ``size`` when ``quota`` picks are spread
    over clusters of ``sizes`` by :func:`allocate` with a random generator and drawn uniformly within each
    cluster: 1 for a cluster at or under the level, else ``(level + extra / clusters above the level) / size``."""
    level, extra = water_level(sizes, quota)
    if size <= level:
        return 1.0
    above = sum(1 for s in sizes if s > level)
    return (level + extra / above) / size


class SetItem(BaseModel):
    """One question of a regression set version, with its stratum and sampling design."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    stratum: Stratum
    candidate: Candidate
    cluster: int
    inclusion_probability: float = Field(gt=0, le=1)
    count: int = Field(ge=1)
    """Production requests it stands for."""
    weight: float
    """``count / inclusion_probability``: its Horvitz-Thompson weight back to production traffic."""
    pinned: bool = False
    merged_keys: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Selection:
    """What :func:`select` chose and how many questions each stratum had to choose from."""

    items: list[SetItem]
    pool_sizes: dict[Stratum, int] = field(default_factory=dict)
    clusters: dict[Stratum, int] = field(default_factory=dict)


def select(
    pooled: Sequence[Pooled],
    clusters: Sequence[int],
    sizes: Mapping[Stratum, int],
    seed: int,
    pinned: frozenset[str] = frozenset(),
) -> Selection:
    """Sample each stratum's quota evenly across clusters, uniformly within a cluster (seeded).

    When the quota does not divide evenly (fewer picks than clusters, say), the clusters that get one pick
    more are drawn at random too, so every question of the stratum can be chosen and its stated inclusion
    probability (:func:`cluster_probability`) is exact.

    Pinned keys are always in (probability 1) and count toward their stratum's quota. ``clusters[i]`` is the
    cluster of ``pooled[i]``. The same inputs and seed give the same selection.
    """
    rng = random.Random(seed)
    items: list[SetItem] = []
    pool_sizes: dict[Stratum, int] = {}
    n_clusters: dict[Stratum, int] = {}
    for stratum in STRATA:
        members = [(p, clusters[i]) for i, p in enumerate(pooled) if p.stratum == stratum]
        pool_sizes[stratum] = len(members)
        forced = [(p, c) for p, c in members if p.candidate.key in pinned]
        items += [_item(p, c, 1.0, pinned=True) for p, c in forced]
        free = [(p, c) for p, c in members if p.candidate.key not in pinned]
        by_cluster: dict[int, list[Pooled]] = {}
        for p, c in free:
            by_cluster.setdefault(c, []).append(p)
        n_clusters[stratum] = len(by_cluster)
        order = sorted(by_cluster)
        quota = max(0, sizes.get(stratum, 0) - len(forced))
        cluster_sizes = [len(by_cluster[c]) for c in order]
        picks = allocate(cluster_sizes, quota, rng)
        for c, k in zip(order, picks, strict=True):
            members_c = by_cluster[c]
            chosen = rng.sample(range(len(members_c)), k) if k else []
            probability = cluster_probability(len(members_c), cluster_sizes, quota)
            items += [_item(members_c[j], c, probability) for j in sorted(chosen)]
    return Selection(items, pool_sizes, n_clusters)


def _item(p: Pooled, cluster: int, probability: float, pinned: bool = False) -> SetItem:
    probability *= p.phase_one
    return SetItem(
        key=p.candidate.key,
        stratum=p.stratum,
        candidate=p.candidate,
        cluster=cluster,
        inclusion_probability=probability,
        count=p.count,
        weight=p.count / probability,
        pinned=pinned,
        merged_keys=list(p.merged),
    )


def weighted_share(items: Sequence[SetItem], hits: Mapping[str, bool]) -> float | None:
    """The share of production traffic (Horvitz-Thompson, ratio form) for which ``hits[key]`` holds, over the
    items that have an entry in ``hits``; ``None`` when none has."""
    total = sum(i.weight for i in items if i.key in hits)
    if total == 0:
        return None
    return sum(i.weight for i in items if hits.get(i.key)) / total


def diff_sets(old: Sequence[SetItem], new: Sequence[SetItem]) -> dict[str, list[str]]:
    """Keys added, removed, and moved between strata (as ``key: old -> new``) from ``old`` to ``new``."""
    before = {i.key: i.stratum for i in old}
    after = {i.key: i.stratum for i in new}
    return {
        "added": sorted(k for k in after if k not in before),
        "removed": sorted(k for k in before if k not in after),
        "moved": sorted(
            f"{k}: {before[k]} -> {after[k]}" for k in after if k in before and before[k] != after[k]
        ),
    }


def strata_counts(items: Sequence[SetItem]) -> dict[str, int]:
    """Items per stratum, every stratum named (0 where it has none)."""
    return {stratum: sum(1 for i in items if i.stratum == stratum) for stratum in STRATA}


def as_pinned(item: SetItem) -> SetItem:
    """``item`` pinned by hand: in every later version with probability 1 (its weight is its count)."""
    return item.model_copy(update={"pinned": True, "inclusion_probability": 1.0, "weight": float(item.count)})


def inputs_digest(candidates: Sequence[Candidate]) -> str:
    """A hash of what a build read: the sorted (key, source, source id) of its candidates."""
    return content_hash(sorted((c.key, c.source, c.source_id) for c in candidates), length=32)


class RegressionSetRecord(BaseModel):
    """One frozen version of the regression set: what it holds per stratum and the recipe that built it.

    ``recipe`` holds everything a rebuild needs (window, seed, strata sizes, sources, thresholds, embedder,
    overrides applied) and ``inputs_digest`` a hash of the candidates it was built from, so a rebuild can
    show it got the same inputs. A version is never changed: pinning or dropping an item makes a new one
    (``parent_id`` names the version it came from).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    version: int = Field(ge=1)
    created_at: datetime
    recipe: dict[str, Any] = Field(default_factory=dict)
    inputs_digest: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    """Items per stratum."""
    parent_id: str | None = None
    note: str = ""

    @property
    def label(self) -> str:
        """``vN`` (how a version is named on the command line)."""
        return f"v{self.version}"

    def shortfall(self) -> dict[str, int]:
        """How many items each stratum lacks of the size its recipe asked for (strata that are full are left
        out): a window can hold fewer questions of a kind than asked, which is reported, not an error."""
        sizes = self.recipe.get("sizes") or {}
        return {
            stratum: int(sizes[stratum]) - self.counts.get(stratum, 0)
            for stratum in STRATA
            if stratum in sizes and int(sizes[stratum]) > self.counts.get(stratum, 0)
        }
