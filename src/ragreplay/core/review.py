"""Human review, pure: the failure-tag taxonomy, what a reviewer is shown and says, and the calibration figures.

A :class:`ReviewItem` is one question put to reviewers: the conversation, the two sides (answer and chunks with
their text and dates) and, kept aside for calibration only, the judge's decision. A reviewer sees the sides as
A and B in an order drawn for that item and that reviewer (:class:`Review` keeps which side was A), picks A, B
or tie, may score the axes 1-5, write the correct answer and pick failure tags from a versioned
:class:`Taxonomy`.

The statistics: :func:`cohen_kappa` (two raters), :func:`krippendorff_alpha` (nominal, any number of raters,
missing labels allowed), and :func:`calibrate`: judge vs human agreement on the winner (and per axis where both
scored) with Wilson intervals and kappa, overall, per question tag and per failure tag, with the number of labels
behind each figure and the alerts of an :class:`AlertPolicy`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragreplay.core.ids import content_hash
from ragreplay.core.judge_version import legacy_judge_version
from ragreplay.core.stats import Rate, rate, wilson_interval

# --- the taxonomy ----------------------------------------------------------------------------------------------

BUILTIN_FAILURE_TAGS: tuple[str, ...] = (
    "wrong-version",
    "missing-document",
    "hallucinated-clause",
    "wrong-language",
)
"""The requirement's failure modes; a team adds its own (``failure_tags:`` in ``ragreplay.yaml``)."""

_TAG = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


@dataclass(frozen=True)
class Taxonomy:
    """The failure tags a reviewer may pick, sorted, and their version: a hash of the sorted tags (so the same
    tags are the same version, and adding or removing one makes a new one)."""

    tags: tuple[str, ...]
    version: str

    def check(self, tags: Iterable[str]) -> list[str]:
        """The tags of ``tags`` that are not in this taxonomy (empty when all are)."""
        return [t for t in tags if t not in self.tags]


def taxonomy(team_tags: Iterable[str] = ()) -> Taxonomy:
    """The built-in failure tags plus ``team_tags``. ``ValueError`` names a tag that is not lower-case letters,
    digits and dashes (at most 40 characters, starting with a letter or digit)."""
    extra = [t.strip() for t in team_tags]
    bad = [t for t in extra if not _TAG.match(t)]
    if bad:
        raise ValueError(
            f"failure tag {bad[0]!r} is not allowed: use lower-case letters, digits and dashes (e.g. 'stale-table')"
        )
    tags = tuple(sorted(set(BUILTIN_FAILURE_TAGS) | set(extra)))
    return Taxonomy(tags=tags, version="tax_" + content_hash(list(tags), 12))


# --- what a reviewer is shown ----------------------------------------------------------------------------------

ReviewSource = Literal["regset-contested", "regset-wound", "triage", "calibration"]
REVIEW_SOURCES: tuple[ReviewSource, ...] = ("regset-contested", "regset-wound", "triage", "calibration")
Side = Literal["champion", "challenger"]
SIDES: tuple[Side, ...] = ("champion", "challenger")
Choice = Literal["A", "B", "tie"]
HumanWinner = Literal["champion", "challenger", "tie"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReviewChunk(_Frozen):
    """A chunk one side was given: its id and, when known, its text and its document's date."""

    id: str
    text: str | None = None
    date: dt.date | None = None


class ReviewSide(_Frozen):
    """One side's answer and chunks."""

    answer: str
    chunks: list[ReviewChunk] = Field(default_factory=list)


class HistoryTurn(_Frozen):
    """One earlier message of the conversation."""

    role: str
    content: str


class JudgeDecision(_Frozen):
    """The judge's decision on the item, in champion/challenger terms: never shown before a review is in."""

    judge: str
    prompt_version: str
    winner: HumanWinner | None
    """``None`` when the judge could not score the pair."""
    scores_champion: dict[str, int] = Field(default_factory=dict)
    scores_challenger: dict[str, int] = Field(default_factory=dict)
    judge_version: str | None = None
    """The :class:`~ragreplay.core.judge_version.JudgeVersion` id; ``None`` on decisions stored before versions
    were recorded (see :attr:`version`)."""

    @property
    def version(self) -> str:
        """The judge version this decision is keyed by: the recorded one, else the legacy version of its judge
        and ``prompt_version``."""
        return self.judge_version or legacy_judge_version(self.judge, self.prompt_version).id


class ReviewItem(_Frozen):
    """One question put to reviewers.

    ``key`` is unique within a queue. ``origin`` names where it came from (a shadow row id, a case id, a
    regression set item) and ``challenger`` the challenger's configuration: both are for the tool, never for the
    review screen, which shows the sides only through :meth:`sides`.
    """

    key: str = Field(min_length=1)
    source: ReviewSource
    origin: str = ""
    challenger: str | None = None
    question: str
    history: list[HistoryTurn] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    champion: ReviewSide
    challenger_side: ReviewSide
    judge: JudgeDecision | None = None

    def side(self, name: Side) -> ReviewSide:
        """The champion's or the challenger's side."""
        return self.champion if name == "champion" else self.challenger_side

    def sides(self, a_side: Side) -> tuple[ReviewSide, ReviewSide]:
        """What the reviewer sees as A and B when ``a_side`` is shown as A."""
        return self.side(a_side), self.side(other_side(a_side))


def other_side(side: Side) -> Side:
    """The other side."""
    return "challenger" if side == "champion" else "champion"


# --- what a reviewer says --------------------------------------------------------------------------------------


class Review(_Frozen):
    """One reviewer's decision on one item, as shown to them (``a_side`` was A), mapped back by
    :attr:`winner` and :meth:`scores`."""

    reviewer: str = Field(min_length=1)
    item_key: str = Field(min_length=1)
    a_side: Side
    choice: Choice
    scores_a: dict[str, int] = Field(default_factory=dict)
    scores_b: dict[str, int] = Field(default_factory=dict)
    correct_answer: str | None = None
    failure_tags: list[str] = Field(default_factory=list)
    taxonomy_version: str | None = None
    shown_at: datetime | None = None
    submitted_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @field_validator("scores_a", "scores_b")
    @classmethod
    def _one_to_five(cls, scores: dict[str, int]) -> dict[str, int]:
        for axis, value in scores.items():
            if isinstance(value, bool) or not 1 <= value <= 5:
                raise ValueError(f"axis {axis!r} must be an integer from 1 to 5, got {value!r}")
        return scores

    @model_validator(mode="after")
    def _tidy(self) -> Review:
        if len(set(self.failure_tags)) != len(self.failure_tags):
            raise ValueError("a failure tag is given twice")
        if self.correct_answer is not None and not self.correct_answer.strip():
            raise ValueError("correct_answer is empty: leave it out instead")
        return self

    @property
    def winner(self) -> HumanWinner:
        """The choice in champion/challenger terms."""
        if self.choice == "tie":
            return "tie"
        return self.a_side if self.choice == "A" else other_side(self.a_side)

    def scores(self, side: Side) -> dict[str, int]:
        """The axis scores the reviewer gave ``side`` (empty when none)."""
        return self.scores_a if side == self.a_side else self.scores_b


# --- agreement between raters ----------------------------------------------------------------------------------


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters over the same units (``a[i]`` and ``b[i]`` label unit ``i``); ``None`` when
    it is undefined (no units, or both raters always give one and the same label, so chance agreement is 1)."""
    if len(a) != len(b):
        raise ValueError(f"two raters need the same number of labels, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[label] * cb[label] for label in ca) / (n * n)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


def krippendorff_alpha(units: Sequence[Sequence[str | None]]) -> float | None:
    """Krippendorff's alpha for nominal labels: ``units[u][r]`` is rater ``r``'s label of unit ``u`` (``None``
    when that rater did not label it; rows may differ in length). Units with fewer than two labels do not count.
    ``None`` when undefined (fewer than two pairable labels, or a single label value overall)."""
    coincidence: dict[tuple[str, str], float] = {}
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            pair = (values[i], values[j])
            coincidence[pair] = coincidence.get(pair, 0.0) + 1 / (m - 1)
    n_c: dict[str, float] = {}
    for (c, _), weight in coincidence.items():
        n_c[c] = n_c.get(c, 0.0) + weight
    n = sum(n_c.values())
    if n <= 1 or len(n_c) < 2:
        return None
    disagree = sum(w for (c, k), w in coincidence.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    return 1 - (n - 1) * disagree / expected


@dataclass(frozen=True)
class RaterPair:
    """Two reviewers on the items both labelled."""

    a: str
    b: str
    n: int
    agreement: Rate
    kappa: float | None


@dataclass(frozen=True)
class InterAnnotator:
    """Reviewers against each other on the winner, where items overlap."""

    items: int
    """Items labelled by two reviewers or more."""
    alpha: float | None
    pairs: list[RaterPair]


def inter_annotator(reviews: Iterable[Review]) -> InterAnnotator:
    """Agreement between reviewers on the winner: Krippendorff's alpha over every item with two labels or more,
    and Cohen's kappa for each pair of reviewers who share at least one item."""
    by_item: dict[str, dict[str, HumanWinner]] = {}
    for r in reviews:
        by_item.setdefault(r.item_key, {})[r.reviewer] = r.winner
    overlapping = {k: v for k, v in by_item.items() if len(v) >= 2}
    alpha = krippendorff_alpha([list(v.values()) for v in overlapping.values()])
    reviewers = sorted({name for v in overlapping.values() for name in v})
    pairs = []
    for a, b in itertools.combinations(reviewers, 2):
        shared = [(v[a], v[b]) for v in overlapping.values() if a in v and b in v]
        if not shared:
            continue
        la, lb = [x for x, _ in shared], [y for _, y in shared]
        agree = sum(x == y for x, y in shared)
        pairs.append(RaterPair(a, b, len(shared), rate(agree, len(shared)), cohen_kappa(la, lb)))
    return InterAnnotator(items=len(overlapping), alpha=alpha, pairs=pairs)


# --- judge vs human ----------------------------------------------------------------------------------------------

Status = Literal["ok", "alert", "not-enough-labels"]


def min_labels_for(threshold: float) -> int:
    """The fewest labels with which a perfect record's Wilson lower bound reaches ``threshold``: below it the
    bound cannot clear the threshold whatever the labels say, so the figure is "not enough labels yet"."""
    if not 0 < threshold < 1:
        raise ValueError(f"a threshold is a proportion between 0 and 1, got {threshold}")
    n = 1
    while wilson_interval(n, n)[0] < threshold:
        n += 1
    return n


@dataclass(frozen=True)
class AlertPolicy:
    """When calibration alerts: the Wilson lower bound of the agreement under ``overall`` (all labels) or under
    ``per_tag`` on any question tag or failure tag. A figure with fewer labels than its minimum (by default
    :func:`min_labels_for` its threshold: 16 at 0.80, 9 at 0.70) is "not enough labels yet", never an alert."""

    overall: float = 0.80
    per_tag: float = 0.70
    min_n_overall: int | None = None
    min_n_tag: int | None = None

    def __post_init__(self) -> None:
        for name in ("overall", "per_tag"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise ValueError(f"{name} threshold must be between 0 and 1, got {value}")
        for name in ("min_n_overall", "min_n_tag"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")

    def minimum(self, level: Literal["overall", "tag"]) -> int:
        """The labels a figure of ``level`` needs before it can alert."""
        if level == "overall":
            return self.min_n_overall if self.min_n_overall is not None else min_labels_for(self.overall)
        return self.min_n_tag if self.min_n_tag is not None else min_labels_for(self.per_tag)

    def threshold(self, level: Literal["overall", "tag"]) -> float:
        return self.overall if level == "overall" else self.per_tag


@dataclass(frozen=True)
class Agreement:
    """Judge vs human on one slice: the labels behind it, how many agree (with the Wilson interval), kappa, and
    the slice's alert status against its threshold."""

    label: str
    agreement: Rate
    kappa: float | None
    status: Status
    threshold: float
    min_n: int

    @property
    def n(self) -> int:
        return self.agreement.n


@dataclass(frozen=True)
class CalibrationPair:
    """One item's judge decision and its human label (the reviewers' majority winner)."""

    item_key: str
    tags: dict[str, str]
    failure_tags: tuple[str, ...]
    judge_winner: HumanWinner
    human_winner: HumanWinner
    judge_axes: dict[str, HumanWinner]
    human_axes: dict[str, HumanWinner]


@dataclass(frozen=True)
class Calibration:
    """Judge vs human: overall, per axis, per question tag (``key=value``) and per failure tag, the alerts, and
    what was left out (items the judge could not score, items whose reviewers split evenly)."""

    overall: Agreement
    per_axis: list[Agreement]
    per_tag: list[Agreement]
    per_failure_tag: list[Agreement]
    judge_unscored: int
    humans_split: int
    policy: AlertPolicy
    judges: list[str] = field(default_factory=list)

    @property
    def alerts(self) -> list[Agreement]:
        """The figures whose lower bound is under their threshold, overall first."""
        return [a for a in [self.overall, *self.per_tag, *self.per_failure_tag] if a.status == "alert"]

    @property
    def status(self) -> Status:
        """``alert`` if any figure alerts; else ``not-enough-labels`` while the overall figure has too few
        labels; else ``ok``."""
        if self.alerts:
            return "alert"
        return "not-enough-labels" if self.overall.status == "not-enough-labels" else "ok"


def axis_winner(champion: int, challenger: int) -> HumanWinner:
    """Which side an axis prefers: the higher score, ``tie`` when equal."""
    if champion == challenger:
        return "tie"
    return "champion" if champion > challenger else "challenger"


def majority(winners: Sequence[HumanWinner]) -> HumanWinner | None:
    """The most frequent winner, ``None`` when the top two are level (or there is none)."""
    counts = Counter(winners).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _axes_of(reviews: Sequence[Review]) -> dict[str, HumanWinner]:
    votes: dict[str, list[HumanWinner]] = {}
    for r in reviews:
        champ, chall = r.scores("champion"), r.scores("challenger")
        for axis in sorted(set(champ) & set(chall)):
            votes.setdefault(axis, []).append(axis_winner(champ[axis], chall[axis]))
    out = {}
    for axis, vs in votes.items():
        m = majority(vs)
        if m is not None:
            out[axis] = m
    return out


def calibration_pairs(
    items: Mapping[str, ReviewItem], reviews: Iterable[Review]
) -> tuple[list[CalibrationPair], int, int]:
    """Pair each reviewed item's judge decision with its human label: ``(pairs, judge_unscored, humans_split)``.
    Items without a judge decision are ignored; reviews of unknown items too."""
    by_item: dict[str, list[Review]] = {}
    for r in reviews:
        by_item.setdefault(r.item_key, []).append(r)
    pairs, unscored, split = [], 0, 0
    for key in sorted(by_item):
        item = items.get(key)
        if item is None or item.judge is None:
            continue
        if item.judge.winner is None:
            unscored += 1
            continue
        its = by_item[key]
        human = majority([r.winner for r in its])
        if human is None:
            split += 1
            continue
        judge_axes = {
            axis: axis_winner(item.judge.scores_champion[axis], item.judge.scores_challenger[axis])
            for axis in sorted(set(item.judge.scores_champion) & set(item.judge.scores_challenger))
        }
        pairs.append(
            CalibrationPair(
                item_key=key,
                tags=dict(item.tags),
                failure_tags=tuple(sorted({t for r in its for t in r.failure_tags})),
                judge_winner=item.judge.winner,
                human_winner=human,
                judge_axes=judge_axes,
                human_axes=_axes_of(its),
            )
        )
    return pairs, unscored, split


def agreement(
    label: str,
    judge: Sequence[str],
    human: Sequence[str],
    policy: AlertPolicy,
    level: Literal["overall", "tag"],
) -> Agreement:
    """Judge vs human on one slice, with its status under ``policy``."""
    n = len(judge)
    agree = sum(j == h for j, h in zip(judge, human, strict=True))
    r = rate(agree, n)
    threshold, min_n = policy.threshold(level), policy.minimum(level)
    status: Status = "not-enough-labels" if n < min_n else ("alert" if r.low < threshold else "ok")
    return Agreement(label, r, cohen_kappa(judge, human), status, threshold, min_n)


def calibrate(
    items: Mapping[str, ReviewItem], reviews: Iterable[Review], policy: AlertPolicy | None = None
) -> Calibration:
    """Judge vs human agreement on the winner overall, per axis (where both scored the axis), per question tag
    and per failure tag, with the alerts of ``policy``. Per-axis figures are shown but do not alert (the
    requirement's thresholds are on the winner)."""
    policy = policy or AlertPolicy()
    pairs, unscored, split = calibration_pairs(items, reviews)

    def slice_of(
        label: str, chosen: Sequence[CalibrationPair], level: Literal["overall", "tag"]
    ) -> Agreement:
        return agreement(
            label, [p.judge_winner for p in chosen], [p.human_winner for p in chosen], policy, level
        )

    per_axis = []
    for axis in sorted({a for p in pairs for a in p.judge_axes if a in p.human_axes}):
        both = [p for p in pairs if axis in p.judge_axes and axis in p.human_axes]
        per_axis.append(
            agreement(
                axis, [p.judge_axes[axis] for p in both], [p.human_axes[axis] for p in both], policy, "tag"
            )
        )
    tag_values = sorted({(k, v) for p in pairs for k, v in p.tags.items()})
    per_tag = [slice_of(f"{k}={v}", [p for p in pairs if p.tags.get(k) == v], "tag") for k, v in tag_values]
    failure_tags = sorted({t for p in pairs for t in p.failure_tags})
    per_failure = [slice_of(t, [p for p in pairs if t in p.failure_tags], "tag") for t in failure_tags]
    judges = sorted(
        {f"{j.judge}@{j.prompt_version}" for p in pairs if (j := items[p.item_key].judge) is not None}
    )
    return Calibration(
        overall=slice_of("overall", pairs, "overall"),
        per_axis=per_axis,
        per_tag=per_tag,
        per_failure_tag=per_failure,
        judge_unscored=unscored,
        humans_split=split,
        policy=policy,
        judges=judges,
    )
