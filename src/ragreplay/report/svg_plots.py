"""The statistical plots of the reports and the dashboard as inline SVG: rates with their intervals on an axis,
the same as small multiples (one panel per tag), figures over days as lines with interval bands, and
distributions per side (latency, cost per case) as box-and-strip plots. Built on the primitives of
:mod:`ragreplay.report.svg`, with the same guarantees: escaped text, a hover title per mark, ``role="img"`` with
an ``aria-label``, a "no data" chart for empty input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from ragreplay.core.run_summary import percentile
from ragreplay.report.svg import (
    PALETTE,
    Formatter,
    Scale,
    coord,
    document,
    empty_chart,
    nice_ticks,
    number,
    share,
    short,
    text,
    title,
    x_axis,
    y_axis,
)

SHARE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Axis ticks of a share."""

MAX_STRIP_POINTS = 400
"""Points a strip plot draws per group at most (evenly chosen); its box and whiskers use every value."""


@dataclass(frozen=True)
class Interval:
    """A figure with its interval, as an interval plot draws it: ``value`` (``None``: undefined, nothing
    drawn), ``low`` and ``high``, a ``note`` (e.g. ``12/40``) for the hover text, and a ``threshold`` (a bar the
    figure must clear, drawn as a dashed tick on its row; ``None``: none)."""

    label: str
    value: float | None
    low: float
    high: float
    note: str = ""
    threshold: float | None = None


@dataclass(frozen=True)
class Series:
    """One line of a line chart: a point per x position (``None``: no figure that day, the line breaks)."""

    name: str
    points: Sequence[Interval | None]


def _threshold_mark(item: Interval, scale: Scale, y: float, fmt: Formatter) -> str:
    """A dashed tick across the row at the item's threshold, with its own hover title (empty without one)."""
    if item.threshold is None:
        return ""
    x = coord(scale(item.threshold))
    return (
        f'<line class="threshold" x1="{x}" x2="{x}" y1="{coord(y - 9)}" y2="{coord(y + 9)}" stroke="#b3261e" '
        f'stroke-width="2" stroke-dasharray="3 2" data-threshold="{item.threshold!r}">'
        f"{title(f'{item.label}: threshold {fmt(item.threshold)}')}</line>"
    )


def _interval_marks(item: Interval, scale: Scale, y: float, color: str, fmt: Formatter) -> str:
    """The whisker from low to high and the dot at the value, one hover title for both (and the threshold's
    tick, when the item has one)."""
    threshold = _threshold_mark(item, scale, y, fmt)
    if item.value is None:
        return threshold + text(scale.start + 4, y + 4, f"– {item.note}".strip(), css="empty-note")
    hover = title(f"{item.label}: {fmt(item.value)} [{fmt(item.low)}–{fmt(item.high)}] {item.note}".strip())
    return (
        f'<g class="interval" data-label="{escape(item.label)}" data-value="{item.value!r}" '
        f'data-low="{item.low!r}" data-high="{item.high!r}">{hover}'
        f'<line x1="{coord(scale(item.low))}" x2="{coord(scale(item.high))}" y1="{coord(y)}" y2="{coord(y)}" '
        f'stroke="{color}" stroke-width="3" stroke-linecap="round" stroke-opacity="0.45"/>'
        f'<circle cx="{coord(scale(item.value))}" cy="{coord(y)}" r="4.5" fill="{color}"/></g>{threshold}'
    )


def interval_plot(
    items: Sequence[Interval],
    label: str,
    *,
    width: float = 460,
    label_width: float = 170,
    row_height: float = 24,
    ticks: Sequence[float] = SHARE_TICKS,
    fmt: Formatter = share,
) -> Markup:
    """One row per figure: its label, a dot at the value and a bar across its interval, on a shared axis (a
    share from 0 to 100% by default)."""
    if not items:
        return empty_chart("interval-plot", label, width)
    top = 6.0
    axis_y = top + row_height * len(items) + 4
    scale = Scale(ticks[0], ticks[-1], label_width, width - 16)
    body = [x_axis(scale, ticks, axis_y, fmt, grid_to=top)]
    for i, item in enumerate(items):
        y = top + (i + 0.5) * row_height
        body.append(text(label_width - 8, y + 4, short(item.label), "end"))
        body.append(_interval_marks(item, scale, y, PALETTE[0], fmt))
    return document("interval-plot", width, axis_y + 22, label, body)


def small_multiples(
    panels: Sequence[tuple[str, Sequence[Interval]]],
    label: str,
    *,
    columns: int = 3,
    panel_width: float = 250,
    label_width: float = 92,
    row_height: float = 20,
    ticks: Sequence[float] = SHARE_TICKS,
    fmt: Formatter = share,
) -> Markup:
    """One small interval plot per panel (e.g. per tag value), all on the same axis and scale so they compare
    at a glance, laid out ``columns`` to a row."""
    if not panels:
        return empty_chart("small-multiples", label)
    rows_per_panel = max(len(items) for _, items in panels)
    panel_height = 20 + rows_per_panel * row_height + 26
    columns = max(1, min(columns, len(panels)))
    n_rows = -(-len(panels) // columns)
    body = []
    for k, (name, items) in enumerate(panels):
        ox, oy = (k % columns) * panel_width, (k // columns) * panel_height
        scale = Scale(ticks[0], ticks[-1], ox + label_width, ox + panel_width - 14)
        axis_y = oy + 20 + rows_per_panel * row_height + 2
        marks = [text(ox + 4, oy + 13, short(name, 34), css="label panel-title"), title(name)]
        marks.append(x_axis(scale, ticks, axis_y, fmt, grid_to=oy + 20))
        for i, item in enumerate(items):
            y = oy + 20 + (i + 0.5) * row_height
            marks.append(text(ox + label_width - 6, y + 4, short(item.label, 14), "end"))
            marks.append(_interval_marks(item, scale, y, PALETTE[i % len(PALETTE)], fmt))
        body.append(f'<g class="panel" data-panel="{escape(name)}">{"".join(marks)}</g>')
    return document("small-multiples", panel_width * columns, panel_height * n_rows, label, body)


def _x_labels(labels: Sequence[str], most: int = 7) -> list[int]:
    """The positions whose x label is drawn: at most ``most``, evenly spread, first and last included."""
    if len(labels) <= most:
        return list(range(len(labels)))
    step = (len(labels) - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


def _runs(points: Sequence[Interval | None]) -> list[list[int]]:
    """The stretches of consecutive positions that have a figure."""
    runs: list[list[int]] = [[]]
    for i, p in enumerate(points):
        if p is None or p.value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(i)
    return [r for r in runs if r]


def line_chart(
    x_labels: Sequence[str],
    series: Sequence[Series],
    label: str,
    *,
    width: float = 560,
    height: float = 200,
    ticks: Sequence[float] = SHARE_TICKS,
    fmt: Formatter = share,
) -> Markup:
    """Lines over equally spaced x positions (e.g. days), each with a shaded band across its intervals, a dot
    per figure (with a hover title) and a legend; a position without a figure breaks the line."""
    if not x_labels or not any(p is not None and p.value is not None for s in series for p in s.points):
        return empty_chart("line-chart", label, width)
    left, right, top, bottom = 44.0, 12.0, 22.0, 26.0
    ys = Scale(ticks[0], ticks[-1], height - bottom, top)
    step = (width - left - right) / max(1, len(x_labels) - 1)

    def x_of(i: int) -> float:
        return left + (i * step if len(x_labels) > 1 else (width - left - right) / 2)

    body = [y_axis(ys, ticks, left, fmt, grid_to=width - right)]
    body.append(
        f'<line class="axis-line" x1="{left}" x2="{coord(width - right)}" y1="{coord(height - bottom)}" '
        f'y2="{coord(height - bottom)}"/>'
    )
    for i in _x_labels(x_labels):
        body.append(text(x_of(i), height - bottom + 15, x_labels[i], "middle", "tick-label"))
    for k, s in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        body.append(text(left + 6 + k * 150, 12, f"● {short(s.name, 20)}", css="label legend", fill=color))
        marks = []
        for run in _runs(s.points):
            pts = [(i, s.points[i]) for i in run]
            upper = " ".join(f"{coord(x_of(i))},{coord(ys(p.high))}" for i, p in pts if p is not None)
            lower = " ".join(
                f"{coord(x_of(i))},{coord(ys(p.low))}" for i, p in reversed(pts) if p is not None
            )
            marks.append(
                f'<polygon class="band" points="{upper} {lower}" fill="{color}" fill-opacity="0.15"/>'
            )
            line = " ".join(
                f"{coord(x_of(i))},{coord(ys(p.value))}"
                for i, p in pts
                if p is not None and p.value is not None
            )
            marks.append(
                f'<polyline class="line" points="{line}" fill="none" stroke="{color}" stroke-width="2"/>'
            )
        for i, p in enumerate(s.points):
            if p is None or p.value is None:
                continue
            hover = f"{s.name}, {x_labels[i]}: {fmt(p.value)} [{fmt(p.low)}–{fmt(p.high)}] {p.note}".strip()
            marks.append(
                f'<circle class="point" cx="{coord(x_of(i))}" cy="{coord(ys(p.value))}" r="3" fill="{color}" '
                f'data-x="{escape(x_labels[i])}" data-value="{p.value!r}">{title(hover)}</circle>'
            )
        body.append(f'<g class="series" data-series="{escape(s.name)}">{"".join(marks)}</g>')
    return document("line-chart", width, height, label, body)


def _spread(values: Sequence[float], most: int) -> list[float]:
    """At most ``most`` of ``values``, evenly chosen from the sorted list (its extremes kept)."""
    ordered = sorted(values)
    if len(ordered) <= most:
        return ordered
    step = (len(ordered) - 1) / (most - 1)
    return [ordered[round(i * step)] for i in range(most)]


def box_plot(
    groups: Sequence[tuple[str, Sequence[float]]],
    label: str,
    *,
    unit: str = "",
    width: float = 520,
    label_width: float = 120,
    row_height: float = 40,
    fmt: Formatter = number,
    sizes: Sequence[int] | None = None,
) -> Markup:
    """One row per group (e.g. per side): a box from the 25th to the 75th percentile with the median marked,
    whiskers to the smallest and largest value, and the values themselves as a strip of dots (at most
    :data:`MAX_STRIP_POINTS`, evenly chosen), on one shared axis. ``sizes``: each group's count of values when
    ``values`` are its evenly spaced quantiles (a rollup's), not the values themselves."""
    counts = list(sizes) if sizes is not None else [len(values) for _, values in groups]
    filled = [(name, [float(v) for v in values]) for name, values in groups if values]
    shown_n = [n for (_, values), n in zip(groups, counts, strict=True) if values]
    if not filled:
        return empty_chart("box-plot", label, width)
    every = [v for _, values in filled for v in values]
    ticks = nice_ticks(min(0.0, min(every)), max(every))
    top = 6.0
    axis_y = top + row_height * len(filled) + 4
    scale = Scale(ticks[0], ticks[-1], label_width, width - 20)
    with_unit = (lambda v: f"{fmt(v)} {unit}") if unit else fmt
    body = [x_axis(scale, ticks, axis_y, with_unit, grid_to=top)]
    for i, (name, values) in enumerate(filled):
        color = PALETTE[i % len(PALETTE)]
        mid = top + (i + 0.5) * row_height
        q1, med, q3 = (float(percentile(values, q) or 0.0) for q in (25, 50, 75))
        lo, hi = min(values), max(values)
        hover = (
            f"{name}: n={shown_n[i]}, median {with_unit(med)}, p25 {with_unit(q1)}, p75 {with_unit(q3)}, "
            f"min {with_unit(lo)}, max {with_unit(hi)}"
        )
        box_y = mid - row_height * 0.3
        # a fixed jitter (no randomness: the same report twice is the same page)
        jitter = [row_height * 0.32 * (((j * 37) % 11) / 10 - 0.5) for j in range(MAX_STRIP_POINTS)]
        dots = "".join(
            f'<circle cx="{coord(scale(v))}" cy="{coord(mid + jitter[j])}" r="1.6"/>'
            for j, v in enumerate(_spread(values, MAX_STRIP_POINTS))
        )
        body.append(text(label_width - 8, mid + 4, short(name, 18), "end"))
        body.append(
            f'<g class="box" data-group="{escape(name)}" data-n="{shown_n[i]}" data-median="{med!r}">{title(hover)}'
            f'<line class="whisker" x1="{coord(scale(lo))}" x2="{coord(scale(hi))}" y1="{coord(mid)}" '
            f'y2="{coord(mid)}" stroke="{color}"/>'
            f'<rect x="{coord(scale(q1))}" y="{coord(box_y)}" width="{coord(max(1.0, scale(q3) - scale(q1)))}" '
            f'height="{coord(row_height * 0.6)}" fill="{color}" fill-opacity="0.18" stroke="{color}"/>'
            f'<line class="median" x1="{coord(scale(med))}" x2="{coord(scale(med))}" y1="{coord(box_y)}" '
            f'y2="{coord(box_y + row_height * 0.6)}" stroke="{color}" stroke-width="2.5"/>'
            f'<g class="strip" fill="{color}" fill-opacity="0.55">{dots}</g></g>'
        )
    return document("box-plot", width, axis_y + 22, label, body)


__all__ = [
    "Interval",
    "Series",
    "box_plot",
    "interval_plot",
    "line_chart",
    "number",
    "share",
    "small_multiples",
]
