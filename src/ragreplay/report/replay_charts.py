"""The pictures of a replay run's HTML report, from the same :class:`RunSummary` the JSON report dumps: the
verdict matrix as a heatmap, the four rates with their intervals on one axis, the per-tag rates as small
multiples, and the case list grouped by verdict (then by language or tag) so a long run is a page of collapsed
groups with counts, not one flat list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from markupsafe import Markup

from ragreplay.core.run_summary import CaseRow, RateValue, RunSummary
from ragreplay.core.types import Verdict
from ragreplay.report.labels import RATE_LABELS, VERDICT_MEANING
from ragreplay.report.svg import heatmap
from ragreplay.report.svg_plots import Interval, interval_plot, small_multiples

MATRIX_ROWS = ("users said GOOD", "users said BAD")
MATRIX_COLUMNS = ("new answer fits the old one", "new answer differs")
LANGUAGE_KEYS = ("language", "lang")
"""Tag keys that name a case's language; the case list sub-groups by them first."""

CASE_ORDER: tuple[str, ...] = ("BAD_NO_FIT", "GOOD_NO_FIT", "UNSCORABLE", "ERROR", "BAD_FIT", "GOOD_FIT")
"""The order of the case groups: review first, then possible regressions, then the rest."""

GROUP_MEANING = {
    **{str(v): m for v, m in VERDICT_MEANING.items()},
    "UNSCORABLE": "the judge could not say whether the new answer fits the old one",
    "ERROR": "the new configuration or the judge failed on the case",
}

Item = TypeVar("Item")


def rate_interval(label: str, r: RateValue) -> Interval:
    """A rate as an interval plot draws it: value, Wilson interval and k/n."""
    return Interval(label, r.value if r.n else None, r.low, r.high, f"{r.k}/{r.n}")


def verdict_heatmap(s: RunSummary) -> Markup:
    """The 2 x 2 verdict matrix (users' GOOD/BAD x the new answer fits/differs) shaded by count."""
    c = s.rates.counts
    values: list[Sequence[float | None]] = [
        [c[Verdict.GOOD_FIT], c[Verdict.GOOD_NO_FIT]],
        [c[Verdict.BAD_FIT], c[Verdict.BAD_NO_FIT]],
    ]
    return heatmap(MATRIX_ROWS, MATRIX_COLUMNS, values, "verdict matrix: cases per verdict", cell_width=190)


def rate_plot(s: RunSummary) -> Markup:
    """The four rates of the run, each a dot at its value and a bar across its 95% Wilson interval."""
    items = [rate_interval(label, getattr(s.rates, key)) for key, label, _ in RATE_LABELS]
    return interval_plot(items, "rates with 95% Wilson intervals")


def tag_multiples(s: RunSummary) -> Markup:
    """One panel per tag value: GOOD answers kept and BAD answers changed, on the same axis."""
    panels = [
        (
            f"{t.tag}={t.value}",
            [
                rate_interval("GOOD kept", t.rates.good_maintenance),
                rate_interval("BAD changed", t.rates.bad_change),
            ],
        )
        for t in s.by_tag
    ]
    return small_multiples(panels, "per tag: GOOD answers kept and BAD answers changed, 95% intervals")


@dataclass(frozen=True)
class CaseGroup(Generic[Item]):
    """One collapsed group of a case list: its key (a verdict or outcome), what it means, and its items split
    into sub-groups (by language or tag; one unnamed sub-group when the items carry neither)."""

    key: str
    meaning: str
    count: int
    subgroups: list[tuple[str, list[Item]]]


def sub_key(tags: dict[str, str], by: str | None) -> str:
    """The sub-group of an item with ``tags`` when grouping by the tag key ``by`` (``by=-`` for none)."""
    return "" if by is None else f"{by}={tags.get(by, '-')}"


def grouping_key(tag_sets: Sequence[dict[str, str]]) -> str | None:
    """The tag key to sub-group a list by: a language key when any item has one, else the key most items
    carry; ``None`` when no item has a tag."""
    keys = [k for tags in tag_sets for k in tags]
    for lang in LANGUAGE_KEYS:
        if lang in keys:
            return lang
    return max(sorted(set(keys)), key=keys.count) if keys else None


def group_items(
    items: Sequence[Item],
    key_of: Callable[[Item], str],
    tags_of: Callable[[Item], dict[str, str]],
    order: Sequence[str],
    meaning: dict[str, str],
) -> list[CaseGroup[Item]]:
    """``items`` grouped by ``key_of`` in ``order`` (keys not in it last), each group split by language or
    tag (:func:`grouping_key`); empty groups left out."""
    by = grouping_key([tags_of(i) for i in items])
    keys = list(dict.fromkeys([*order, *sorted({key_of(i) for i in items})]))
    groups = []
    for key in keys:
        mine = [i for i in items if key_of(i) == key]
        if not mine:
            continue
        subs: dict[str, list[Item]] = {}
        for item in mine:
            subs.setdefault(sub_key(tags_of(item), by), []).append(item)
        groups.append(CaseGroup(key, meaning.get(key, ""), len(mine), sorted(subs.items())))
    return groups


def case_key(c: CaseRow) -> str:
    """A case's group: its verdict, or ERROR / UNSCORABLE when it has none."""
    if c.verdict is not None:
        return str(c.verdict)
    return "ERROR" if c.error else "UNSCORABLE"


def case_groups(cases: Sequence[CaseRow]) -> list[CaseGroup[CaseRow]]:
    """The replay report's case list: by verdict (review first), then by language or tag."""
    return group_items(cases, case_key, lambda c: c.tags, CASE_ORDER, GROUP_MEANING)
