"""The pictures of a gate's HTML report, from the same :class:`GateReport` the JSON report dumps: each bar's
value and interval on one share axis with its threshold marked, the judge's outcomes per stratum as small
multiples, the wound scores and the latency and cost of each side as box-and-strip plots, the reviewers'
failure tags as bars, and the items grouped by stratum and outcome for the case list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from ragreplay.core.compare_stats import clopper_pearson
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.gate import Bar, ItemOutcome
from ragreplay.gate.run import GateReport
from ragreplay.report.replay_charts import CaseGroup, group_items
from ragreplay.report.svg import bar_chart
from ragreplay.report.svg_plots import Interval, box_plot, interval_plot, small_multiples

STRATA = ("win", "contested", "wound")
"""The regression set's strata, in the order the bars are (wins, contested, wounds)."""

OUTCOME_MEANING = {
    "win: lost": "the judge preferred the champion in both orders: a regression",
    "contested: champion preferred": "the judge preferred the champion's answer in both orders",
    "wound: still open": "the challenger's answer scored under the bar and did not match a reviewer's answer",
    "win: error": "a side or the judge failed",
    "contested: error": "a side or the judge failed",
    "wound: error": "a side or the judge failed",
    "win: unscorable": "the judge could not decide the pair",
    "contested: unscorable": "the judge could not decide the pair",
    "wound: unscorable": "no score and no reviewer's answer to tell whether it is fixed",
    "contested: tie": "neither side won in both orders (a tie, or the two orders disagreed)",
    "contested: challenger preferred": "the judge preferred the challenger's answer in both orders",
    "wound: fixed": "the challenger's answer scored at the bar or above, or matched a reviewer's answer",
    "win: kept": "the challenger did not lose the win",
}
OUTCOME_ORDER = tuple(OUTCOME_MEANING)
"""The order of the case groups: regressions and failures first, what went well last."""


def confidence_text(report: GateReport) -> str:
    """The level of the bars' intervals: ``95%``, or ``98.75%`` for a gate run until decided over 4 looks."""
    return f"{100 * report.policy.confidence:.4g}%"


def bar_interval(bar: Bar) -> Interval:
    """A bar as the interval plot draws it: its share with its interval, n in the hover text, and its
    threshold as a share (the wins bar's allowed losses over its n)."""
    if bar.name == "wins":
        note = f"{bar.k} lost of {bar.n} judged, allowed {bar.threshold:g}"
        threshold = bar.threshold / bar.n if bar.n else None
    elif bar.name == "contested":
        note = f"{bar.k}/{bar.n} won by the challenger, {bar.ties} ties"
        threshold = bar.threshold
    else:
        note = f"{bar.k}/{bar.n} fixed"
        threshold = bar.threshold
    value = bar.value if bar.n else None
    return Interval(f"{bar.name}: {bar.decision}", value, bar.low, bar.high, note, threshold)


def bars_plot(report: GateReport) -> Markup:
    """The three bars: wins lost, contested preference and wounds fixed, each with its interval and its
    threshold marked."""
    items = [bar_interval(b) for b in report.verdict.bars]
    label = f"the bars: each share with its {confidence_text(report)} interval, the threshold dashed"
    return interval_plot(items, label, label_width=190)


def _share(label: str, k: int, n: int, confidence: float) -> Interval:
    """``k`` of ``n`` as a share with its Clopper-Pearson interval (the bars' own)."""
    if n == 0:
        return Interval(label, None, 0.0, 1.0, "0/0")
    low, high = clopper_pearson(k, n, confidence)
    return Interval(label, k / n, low, high, f"{k}/{n}")


def stratum_panels(report: GateReport) -> list[tuple[str, list[Interval]]]:
    """Per stratum, among the pairs the judge decided or tied: the share each side won and the ties; for the
    wounds also the share fixed among those that could be told."""
    confidence = report.policy.confidence
    panels = []
    for stratum in STRATA:
        mine = [o for o in report.outcomes if o.stratum == stratum and o.error is None]
        if not mine:
            continue
        judged = [o for o in mine if o.winner is not None]
        items = [
            _share(label, sum(o.winner == side for o in judged), len(judged), confidence)
            for side, label in (
                ("challenger", "challenger won"),
                ("champion", "champion won"),
                ("tie", "ties"),
            )
        ]
        if stratum == "wound":
            told = [f for f in (o.fixed(report.policy.fixed_score) for o in mine) if f is not None]
            items.append(_share("fixed", sum(told), len(told), confidence))
        panels.append((f"{stratum} ({len(mine)} answered)", items))
    return panels


def strata_plot(report: GateReport) -> Markup:
    """:func:`stratum_panels` as small multiples on one axis."""
    return small_multiples(
        stratum_panels(report), "per stratum: pairs each side won in both orders, ties, wounds fixed"
    )


def wound_scores(report: GateReport) -> list[tuple[str, list[float]]]:
    """Each side's mean axis score (1-5, both orders) on the open wounds the judge scored."""
    wounds = [o for o in report.outcomes if o.stratum == "wound" and o.error is None]
    return [
        (side, [s for o in wounds if (s := getattr(o, f"{side}_score")) is not None])
        for side in ("champion", "challenger")
    ]


def wound_plot(report: GateReport) -> Markup:
    """The wound scores of each side as box-and-strip plots."""
    label = f"score on open wounds (1-5); fixed at {report.policy.fixed_score:g} or more"
    return box_plot(wound_scores(report), label, fmt=lambda v: f"{v:.3g}")


def per_side(report: GateReport, field: str) -> list[tuple[str, list[float]]]:
    """Each side's figure ``field`` of the payloads (``latency_ms``, ``target_cost_usd``) on the items with no
    error; a side's missing figure is left out."""
    groups: dict[str, list[float]] = {"champion": [], "challenger": []}
    for o in report.outcomes:
        if o.error is not None:
            continue
        figures: dict[str, Any] = report.payloads.get(o.key, {}).get(field) or {}
        for side, values in groups.items():
            if isinstance(figures.get(side), int | float):
                values.append(float(figures[side]))
    return list(groups.items())


def latency_plot(report: GateReport) -> Markup:
    """Latency per item of each side (the items both answered)."""
    return box_plot(per_side(report, "latency_ms"), "latency per item of each side", unit="ms")


def cost_plot(report: GateReport) -> Markup:
    """Cost per answer of each side."""
    groups = per_side(report, "target_cost_usd")
    return box_plot(groups, "cost per answer of each side", unit="$", fmt=lambda v: f"{v:.4g}")


def failure_tag_plot(ft: FailureTags) -> Markup:
    """Items per failure tag reviewers gave the gate's questions, most frequent first."""
    bars = [(c.tag, float(c.items)) for c in ft.tags]
    hovers = [f"{c.tag}: {c.items} item(s), {c.reviews} review(s)" for c in ft.tags]
    width = min(900.0, max(200.0, 70.0 * len(bars) + 56))
    return bar_chart(bars, "failure tags: items per tag", width=width, hovers=hovers)


def outcome_key(o: ItemOutcome, fixed_score: float) -> str:
    """An item's group in the case list: its stratum and what the gate found."""
    if o.error is not None:
        return f"{o.stratum}: error"
    if o.stratum == "wound":
        fixed = o.fixed(fixed_score)
        return "wound: unscorable" if fixed is None else f"wound: {'fixed' if fixed else 'still open'}"
    if o.winner is None:
        return f"{o.stratum}: unscorable"
    if o.stratum == "win":
        return "win: lost" if o.lost() else "win: kept"
    return "contested: tie" if o.winner == "tie" else f"contested: {o.winner} preferred"


def outcome_groups(report: GateReport, shown: Sequence[ItemOutcome]) -> list[CaseGroup[ItemOutcome]]:
    """``shown`` grouped by stratum and outcome, regressions and failures first."""
    fixed_score = report.policy.fixed_score
    return group_items(
        shown, lambda o: outcome_key(o, fixed_score), lambda _: {}, OUTCOME_ORDER, OUTCOME_MEANING
    )


def gate_charts(report: GateReport, failure_tags: FailureTags | None) -> dict[str, Markup]:
    """Every chart of a gate's page, by name (the failure tags' only when reviewers gave any)."""
    charts = {
        "bars": bars_plot(report),
        "strata": strata_plot(report),
        "wounds": wound_plot(report),
        "latency": latency_plot(report),
        "cost": cost_plot(report),
    }
    if failure_tags is not None and failure_tags.tags:
        charts["failure_tags"] = failure_tag_plot(failure_tags)
    return charts
