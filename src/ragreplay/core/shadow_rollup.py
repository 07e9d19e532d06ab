"""Rollups of the judged shadow log: what the shadow report and the dashboard show, kept per UTC hour and
challenger, so that a window's figures cost O(hours x challengers), not O(rows). Pure.

One judged row contributes :func:`contribution` (its :class:`RowFacts`: the row's figures, its judgment and the
user's feedback on its request). Contributions add: counts exactly (integers), dollars exactly (fractions of the
floats, rounded once when shown, as ``math.fsum`` rounds a full scan), the names of judges in order of first
appearance, and latencies and costs into DDSketch-style sketches (PyPI ``ddsketch``, DataDog's: logarithmic
buckets with relative accuracy :data:`RELATIVE_ACCURACY`, merged by adding bucket counts). A quantile from a
sketch is within 1% of the sample value at the quantile's rank (the lower of the two values an exact percentile
interpolates between).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from ddsketch import DDSketch, LogarithmicMapping

from ragreplay.core.types import Feedback, Fit
from ragreplay.core.verdicts import verdict_for

RELATIVE_ACCURACY = 0.01
"""A sketch's quantile is within this relative error of the true sample value at that rank."""

HOUR = timedelta(hours=1)
POINTS = 101
"""Quantiles a spread keeps for the box-and-strip charts: every percentile, min and max exact."""

_MAPPING = LogarithmicMapping(RELATIVE_ACCURACY)
_PREFERRED = {"x": "champion", "y": "challenger", "tie": "tie"}

COUNTS: tuple[str, ...] = (
    "judged",  # rows judged (errors included)
    "errors",  # rows where a side failed: counted for nothing else but cost
    "fit",
    "no_fit",
    "fit_unscorable",  # the FIT judge said UNSCORABLE
    "unscorable",  # either judge could not score (the dashboard's "could not score")
    "pref_challenger",
    "pref_champion",
    "pref_tie",
    "pref_none",  # the pairwise judge gave no winner
    "dis_challenger",  # ... among the disagreements (NO_FIT)
    "dis_champion",
    "dis_tie",
    "wrong_champion",  # answers not in the expected language (judgments that carry the check)
    "wrong_challenger",
    "language_unchecked",  # judged before the check was kept with the judgment
    "champion_unpriced",
    "challenger_unpriced",
    "pairs",  # pairwise outcomes (position bias)
    "pairs_both_scored",
    "pairs_consistent",
    "pos_a",
    "pos_b",
    "pos_tie",
    "pairs_unscorable",
    "fb_rated",
    "fb_good",
    "fb_bad",
    "fb_good_challenger",
    "fb_good_champion",
    "fb_good_tie",
    "fb_bad_challenger",
    "fb_bad_champion",
    "fb_bad_tie",
    "fb_GOOD_FIT",
    "fb_GOOD_NO_FIT",
    "fb_BAD_FIT",
    "fb_BAD_NO_FIT",
)
TAG_COUNTS: tuple[str, ...] = ("n", "fit", "no_fit", "dis_challenger", "dis_champion", "dis_tie")
NAME_KINDS: tuple[str, ...] = ("judges", "prompt_versions", "fit_judges", "specs", "orders")
SKETCHES: tuple[str, ...] = ("champion_latency", "challenger_latency", "champion_cost", "challenger_cost")


def hour_of(ts: datetime) -> datetime:
    """The UTC hour ``ts`` falls in (its bucket)."""
    return ts.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _stamp(ts: datetime, row_id: str) -> str:
    return f"{ts.astimezone(UTC):%Y-%m-%dT%H:%M:%S.%f}|{row_id}"


@dataclass
class Sketch:
    """A mergeable quantile sketch: DDSketch's logarithmic buckets (``ddsketch.LogarithmicMapping``) with exact
    counts per bucket, exact min and max."""

    bins: dict[int, int] = field(default_factory=dict)
    negative: dict[int, int] = field(default_factory=dict)
    zeros: int = 0
    n: int = 0
    lo: float | None = None
    hi: float | None = None

    def add(self, value: float) -> None:
        """Take in one value."""
        if value > _MAPPING.min_possible:
            key = _MAPPING.key(value)
            self.bins[key] = self.bins.get(key, 0) + 1
        elif value < -_MAPPING.min_possible:
            key = _MAPPING.key(-value)
            self.negative[key] = self.negative.get(key, 0) + 1
        else:
            self.zeros += 1
        self.n += 1
        self.lo = value if self.lo is None else min(self.lo, value)
        self.hi = value if self.hi is None else max(self.hi, value)

    def merge(self, other: Sketch) -> None:
        """Add ``other``'s values to this sketch."""
        for mine, theirs in ((self.bins, other.bins), (self.negative, other.negative)):
            for key, count in theirs.items():
                mine[key] = mine.get(key, 0) + count
        self.zeros += other.zeros
        self.n += other.n
        if other.lo is not None:
            self.lo = other.lo if self.lo is None else min(self.lo, other.lo)
        if other.hi is not None:
            self.hi = other.hi if self.hi is None else max(self.hi, other.hi)

    def _ddsketch(self) -> DDSketch:
        sketch = DDSketch(RELATIVE_ACCURACY)
        for key, count in self.bins.items():
            sketch.add(_MAPPING.value(key), float(count))
        for key, count in self.negative.items():
            sketch.add(-_MAPPING.value(key), float(count))
        if self.zeros:
            sketch.add(0.0, float(self.zeros))
        return sketch

    def quantiles(self, qs: Sequence[float]) -> list[float | None]:
        """The values at quantiles ``qs`` (0 to 1), kept within the exact min and max; ``None`` when empty."""
        if self.n == 0 or self.lo is None or self.hi is None:
            return [None for _ in qs]
        sketch = self._ddsketch()
        out: list[float | None] = []
        for q in qs:
            value = sketch.get_quantile_value(q)
            out.append(None if value is None else min(max(float(value), self.lo), self.hi))
        return out

    def points(self, k: int = POINTS) -> list[float]:
        """``k`` evenly spaced quantiles from the min to the max (both exact); empty when the sketch is."""
        if self.n == 0 or self.lo is None or self.hi is None:
            return []
        inner = [v for v in self.quantiles([i / (k - 1) for i in range(1, k - 1)]) if v is not None]
        return [self.lo, *inner, self.hi]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (keys as lists, so JSON keeps their type)."""
        return {
            "b": [[k, c] for k, c in sorted(self.bins.items())],
            "m": [[k, c] for k, c in sorted(self.negative.items())],
            "z": self.zeros,
            "n": self.n,
            "lo": self.lo,
            "hi": self.hi,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Sketch:
        """The sketch of :meth:`to_json`."""
        return cls(
            bins={int(k): int(c) for k, c in data.get("b", [])},
            negative={int(k): int(c) for k, c in data.get("m", [])},
            zeros=int(data.get("z", 0)),
            n=int(data.get("n", 0)),
            lo=data.get("lo"),
            hi=data.get("hi"),
        )


@dataclass(frozen=True)
class SideFacts:
    """One side's figures in a row: latency (``None`` when not measured), dollars, unpriced calls."""

    latency_ms: float | None = None
    cost_usd: float = 0.0
    unpriced_calls: int = 0


@dataclass(frozen=True)
class RowFacts:
    """What one judged row brings to the rollups: the row's figures, its judgment and the feedback on its
    request. ``payload`` is the judgment's payload (order, judge specs, pair outcome, language check)."""

    row_id: str
    ts: datetime
    request_id: str
    challenger: str
    tags: Mapping[str, str]
    champion: SideFacts
    challenger_side: SideFacts
    fit: str | None
    winner: str | None
    error: str | None
    judge: str
    judge_prompt_version: str
    fit_judge: str
    payload: Mapping[str, Any]
    feedback: str | None = None


@dataclass
class Rollup:
    """The figures of some judged rows of one challenger (one hour, or a whole window once merged)."""

    counts: dict[str, int] = field(default_factory=dict)
    champion_usd: Fraction = Fraction(0)
    challenger_usd: Fraction = Fraction(0)
    tags: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per kind (:data:`NAME_KINDS`), each name with the (ts, row id) stamp of its first row."""
    sketches: dict[str, Sketch] = field(default_factory=dict)

    def count(self, name: str) -> int:
        """One of :data:`COUNTS` (0 when never counted)."""
        return self.counts.get(name, 0)

    def bump(self, name: str, by: int = 1) -> None:
        """Add ``by`` to count ``name``."""
        if by:
            self.counts[name] = self.counts.get(name, 0) + by

    def sketch(self, name: str) -> Sketch:
        """One of :data:`SKETCHES`, made empty on first use."""
        found = self.sketches.get(name)
        if found is None:
            found = self.sketches[name] = Sketch()
        return found

    def name_order(self, kind: str) -> list[str]:
        """The names of ``kind`` in order of their first row (ts, then id)."""
        return [n for n, _ in sorted(self.names.get(kind, {}).items(), key=lambda item: (item[1], item[0]))]

    def _name(self, kind: str, name: str, stamp: str) -> None:
        known = self.names.setdefault(kind, {})
        seen = known.get(name)
        if seen is None or stamp < seen:
            known[name] = stamp

    def merge(self, other: Rollup) -> None:
        """Add ``other`` to this rollup."""
        for name, value in other.counts.items():
            self.bump(name, value)
        self.champion_usd += other.champion_usd
        self.challenger_usd += other.challenger_usd
        for key, values in other.tags.items():
            mine = self.tags.setdefault(key, {})
            for tag_value, counts in values.items():
                into = mine.setdefault(tag_value, {})
                for name, n in counts.items():
                    into[name] = into.get(name, 0) + n
        for kind, names in other.names.items():
            for name, stamp in names.items():
                self._name(kind, name, stamp)
        for name, sketch in other.sketches.items():
            self.sketch(name).merge(sketch)

    def add_feedback(self, facts: RowFacts, feedback: str | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) the feedback part of ``facts`` with the label ``feedback``."""
        if feedback is None or facts.error is not None:
            return
        label = Feedback(feedback)
        self.bump("fb_rated", sign)
        self.bump(f"fb_{label.value}", sign)
        preferred = _PREFERRED.get(facts.winner or "")
        if preferred is not None:
            self.bump(f"fb_{label.value}_{preferred}", sign)
        if facts.fit is not None:
            verdict = verdict_for(label, Fit(facts.fit))
            if verdict is not None:
                self.bump(f"fb_{verdict.value}", sign)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (dollars as exact fractions in text)."""
        return {
            "c": {k: v for k, v in self.counts.items() if v},
            "usd": [str(self.champion_usd), str(self.challenger_usd)],
            "t": self.tags,
            "names": self.names,
            "s": {k: s.to_json() for k, s in self.sketches.items() if s.n},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rollup:
        """The rollup of :meth:`to_json`."""
        usd = data.get("usd", ["0", "0"])
        return cls(
            counts={str(k): int(v) for k, v in data.get("c", {}).items()},
            champion_usd=Fraction(usd[0]),
            challenger_usd=Fraction(usd[1]),
            tags={k: {v: dict(c) for v, c in vs.items()} for k, vs in data.get("t", {}).items()},
            names={k: dict(v) for k, v in data.get("names", {}).items()},
            sketches={k: Sketch.from_json(v) for k, v in data.get("s", {}).items()},
        )


def _position(rollup: Rollup, outcome: Mapping[str, Any]) -> None:
    rollup.bump("pairs")
    if outcome.get("mode") == "both" and outcome.get("consistent") is not None:
        rollup.bump("pairs_both_scored")
        rollup.bump("pairs_consistent", bool(outcome.get("consistent")))
    for _, judgment in outcome.get("judgments", []):
        winner = judgment.get("winner")
        if winner == "A":
            rollup.bump("pos_a")
        elif winner == "B":
            rollup.bump("pos_b")
        elif winner == "tie":
            rollup.bump("pos_tie")
    rollup.bump("pairs_unscorable", outcome.get("winner") is None)


def language_flags(payload: Mapping[str, Any]) -> tuple[bool, bool] | None:
    """The judgment's wrong-language check (champion, challenger), ``None`` when it was judged without it."""
    found = payload.get("wrong_language")
    if not isinstance(found, list | tuple) or len(found) != 2:
        return None
    return bool(found[0]), bool(found[1])


def contribution(facts: RowFacts) -> Rollup:
    """What one judged row adds to its challenger's rollup."""
    r = Rollup()
    stamp = _stamp(facts.ts, facts.row_id)
    r.bump("judged")
    payload = facts.payload
    for kind, name in (
        ("judges", facts.judge),
        ("prompt_versions", facts.judge_prompt_version),
        ("fit_judges", facts.fit_judge),
        ("orders", str(payload.get("order", "both"))),
    ):
        r._name(kind, name, stamp)
    for spec in payload.get("judge_specs", []) or []:
        if spec:
            r._name("specs", str(spec), stamp)
    outcome = payload.get("outcome")
    if isinstance(outcome, Mapping):
        _position(r, outcome)
    r.champion_usd += Fraction(facts.champion.cost_usd)
    r.challenger_usd += Fraction(facts.challenger_side.cost_usd)
    r.bump("champion_unpriced", facts.champion.unpriced_calls)
    r.bump("challenger_unpriced", facts.challenger_side.unpriced_calls)
    r.sketch("champion_cost").add(facts.champion.cost_usd)
    r.sketch("challenger_cost").add(facts.challenger_side.cost_usd)
    if facts.error is not None:
        r.bump("errors")
        return r
    fit, preferred = facts.fit, _PREFERRED.get(facts.winner or "")
    r.bump("fit", fit == Fit.FIT.value)
    r.bump("no_fit", fit == Fit.NO_FIT.value)
    r.bump("fit_unscorable", fit == Fit.UNSCORABLE.value)
    r.bump("unscorable", fit == Fit.UNSCORABLE.value or preferred is None)
    r.bump(f"pref_{preferred or 'none'}")
    if fit == Fit.NO_FIT.value and preferred is not None:
        r.bump(f"dis_{preferred}")
    flags = language_flags(payload)
    if flags is None:
        r.bump("language_unchecked")
    else:
        r.bump("wrong_champion", flags[0])
        r.bump("wrong_challenger", flags[1])
    for side, name in ((facts.champion, "champion_latency"), (facts.challenger_side, "challenger_latency")):
        if side.latency_ms is not None:
            r.sketch(name).add(side.latency_ms)
    for key, value in facts.tags.items():
        counts = r.tags.setdefault(key, {}).setdefault(value, {})
        for name, add in (
            ("n", True),
            ("fit", fit == Fit.FIT.value),
            ("no_fit", fit == Fit.NO_FIT.value),
            (f"dis_{preferred}", fit == Fit.NO_FIT.value and preferred is not None),
        ):
            if add:
                counts[name] = counts.get(name, 0) + 1
    r.add_feedback(facts, facts.feedback, 1)
    return r


def merged(rollups: Iterable[Rollup]) -> Rollup:
    """The sum of ``rollups``."""
    total = Rollup()
    for r in rollups:
        total.merge(r)
    return total


def usd(value: Fraction) -> float:
    """Exact dollars as the float nearest to them (what ``math.fsum`` gives for the same values)."""
    return float(value)


def fsum_usd(values: Iterable[float]) -> float:
    """The correctly rounded sum of ``values`` (the full scan's way to add dollars)."""
    return math.fsum(values)
