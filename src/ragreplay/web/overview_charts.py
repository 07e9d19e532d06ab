"""The dashboard overview's pictures, drawn on the server with :mod:`ragreplay.report.svg_plots` from the same
figures as the page's tables: per challenger, agreement and preference over the window's days as lines with
95% Wilson interval bands; the per-tag figures as small multiples; latency and cost per request of each side as
box-and-strip plots (the comparison report's own charts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.stats import wilson_interval
from ragreplay.report.compare_charts import cost_plot, latency_plot, tag_multiples
from ragreplay.report.svg_plots import Interval, Series, line_chart


def day_point(day: str, k: int, n: int, note: str) -> Interval | None:
    """A day's share ``k/n`` with its 95% Wilson interval, or ``None`` on a day without any."""
    if n == 0:
        return None
    low, high = wilson_interval(k, n)
    return Interval(day, k / n, low, high, note)


def day_chart(days: Sequence[Mapping[str, Any]], name: str) -> Markup:
    """Agreement and the challenger's win share among decided disagreements per UTC day, each with its band."""
    mine = [d for d in days if d["challenger"] == name]
    agreement = [
        day_point(d["day"], d["agreement_k"], d["agreement_n"], f"{d['agreement_k']}/{d['agreement_n']} same")
        for d in mine
    ]
    preference = [
        day_point(
            d["day"], d["wins"], d["wins"] + d["losses"], f"{d['wins']} vs {d['losses']}, {d['ties']} ties"
        )
        for d in mine
    ]
    return line_chart(
        [d["day"][5:] for d in mine],
        [Series("agreement", agreement), Series(f"{name} preferred", preference)],
        f"champion vs {name} per day: agreement and preference when they disagree, 95% Wilson bands",
    )


def overview_charts(summary: ComparisonSummary, days: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every chart of the overview: ``days`` per challenger name, ``tags``, ``latency`` and ``cost``."""
    return {
        "days": {s.name: day_chart(days, s.name) for s in summary.challengers},
        "tags": tag_multiples(summary),
        "latency": latency_plot(summary),
        "cost": cost_plot(summary),
    }
