"""The pictures of a comparison (``ragreplay compare``, the shadow report, the dashboard), from the same
:class:`ComparisonSummary` the JSON report dumps: agreement and preference per challenger with their intervals,
the same per tag as small multiples, latency and cost per case of each side as box-and-strip plots, and the
rows grouped by challenger and outcome for the case list."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.compare_stats import CompareRow, PreferenceStats
from ragreplay.core.run_summary import RateValue
from ragreplay.core.types import Fit
from ragreplay.report.replay_charts import CaseGroup, group_items
from ragreplay.report.svg_plots import Interval, box_plot, interval_plot, small_multiples

OUTCOME_MEANING = {
    "error": "a side failed: no pair to judge",
    "unscorable": "a judge could not score the pair",
    "differ, challenger preferred": "the answers differ and the judge preferred the challenger's",
    "differ, champion preferred": "the answers differ and the judge preferred the champion's",
    "differ, tie": "the answers differ and the judge called it a tie (or its two orders disagreed)",
    "same answer": "the agreement judge found the two answers the same",
}
OUTCOME_ORDER = tuple(OUTCOME_MEANING)
"""The order of a challenger's groups: failures and disagreements first, agreement last."""


def agreement_interval(label: str, r: RateValue) -> Interval:
    """Agreement as an interval plot draws it."""
    return Interval(label, r.value if r.n else None, r.low, r.high, f"{r.k}/{r.n} same answer")


def preference_interval(label: str, p: PreferenceStats) -> Interval:
    """The challenger's win share among decided pairs as an interval plot draws it."""
    note = f"{p.challenger_wins} vs {p.champion_wins}, {p.ties} ties"
    return Interval(label, p.share if p.n_decided else None, p.low, p.high, note)


def headline_plot(summary: ComparisonSummary) -> Markup:
    """Per challenger: agreement, and the judge's preference for it when the answers differ."""
    items = []
    for s in summary.challengers:
        items.append(agreement_interval(f"{s.name}: agreement", s.agreement))
        items.append(preference_interval(f"{s.name}: preferred", s.preference_disagreements))
    return interval_plot(items, "agreement and preference when they disagree, 95% intervals", label_width=200)


def tag_multiples(summary: ComparisonSummary) -> Markup:
    """One panel per tag value: each challenger's agreement and preference there, on the same axis."""
    panels: dict[str, list[Interval]] = {}
    for s in summary.challengers:
        for t in s.by_tag:
            items = panels.setdefault(f"{t.tag}={t.value}", [])
            items.append(agreement_interval(f"{s.name} agree", t.agreement))
            items.append(preference_interval(f"{s.name} pref", t.preference))
    return small_multiples(
        sorted(panels.items()), "per tag: agreement and preference when they disagree, 95% intervals"
    )


def _per_side(
    summary: ComparisonSummary, field: str, answered_only: bool
) -> tuple[list[tuple[str, list[float]]], list[int]]:
    """Per challenger, the champion's figure and the challenger's on the same rows as the report's (only rows
    where both sides answered when ``answered_only``, as its latency; every row, as its cost), with each
    group's count; the champion is named once when there is one challenger. A summary built from rollups
    (``spreads``) gives each side's evenly spaced quantiles instead of its values."""
    groups: list[tuple[str, list[float]]] = []
    sizes: list[int] = []
    for s in summary.challengers:
        rows = [r for r in summary.rows if r.challenger == s.name and (r.error is None or not answered_only)]
        champion = "champion" if len(summary.challengers) == 1 else f"champion (vs {s.name})"
        for side, name in (("champion", champion), ("challenger", s.name)):
            if s.spreads is not None:
                spread = getattr(s.spreads, f"{side}_{field.removesuffix('_ms').removesuffix('_usd')}")
                groups.append((name, list(spread.points)))
                sizes.append(spread.n)
                continue
            values = [float(v) for r in rows if (v := getattr(r, f"{side}_{field}")) is not None]
            groups.append((name, values))
            sizes.append(len(values))
    return groups, sizes


def latency_plot(summary: ComparisonSummary) -> Markup:
    """Latency per case of each side, on the rows where both answered (as the grid's p50/p95): box (p25-p75,
    median), whiskers (min-max) and the cases as dots."""
    groups, sizes = _per_side(summary, "latency_ms", answered_only=True)
    return box_plot(groups, "latency per case of each side", unit="ms", sizes=sizes)


def cost_plot(summary: ComparisonSummary) -> Markup:
    """Cost per case of each side on every row (as the grid's totals), drawn as the latency plot."""
    groups, sizes = _per_side(summary, "cost_usd", answered_only=False)
    return box_plot(groups, "cost per case of each side", unit="$", fmt=lambda v: f"{v:.4g}", sizes=sizes)


def row_outcome(r: CompareRow) -> str:
    """A row's outcome as the case list groups it."""
    if r.error is not None:
        return "error"
    if r.agreement == Fit.FIT:
        return "same answer"
    if r.agreement is None or r.agreement == Fit.UNSCORABLE or r.preference is None:
        return "unscorable"
    who = {"challenger": "challenger preferred", "champion": "champion preferred", "tie": "tie"}
    return f"differ, {who[r.preference]}"


def row_groups(summary: ComparisonSummary, rows: Sequence[CompareRow]) -> list[CaseGroup[CompareRow]]:
    """``rows`` grouped by challenger and outcome (failures and disagreements first), then language or tag."""
    order = [f"{s.name}: {o}" for s in summary.challengers for o in OUTCOME_ORDER]
    meaning = {f"{s.name}: {o}": m for s in summary.challengers for o, m in OUTCOME_MEANING.items()}
    return group_items(rows, lambda r: f"{r.challenger}: {row_outcome(r)}", lambda r: r.tags, order, meaning)


def comparison_charts(summary: ComparisonSummary) -> dict[str, Markup]:
    """Every chart of a comparison, by name."""
    return {
        "headline": headline_plot(summary),
        "tags": tag_multiples(summary),
        "latency": latency_plot(summary),
        "cost": cost_plot(summary),
    }
