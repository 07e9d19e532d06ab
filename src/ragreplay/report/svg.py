"""Charts as inline SVG drawn on the server, for the HTML reports and the dashboard: no script, no file, font or
library from elsewhere, so a page stays self-contained and passes a strict content security policy.

Every chart is one ``<svg role="img">`` with an ``aria-label`` and a ``<title>`` saying what it shows, and a
``<title>`` on each mark (bar, cell, dot, point, box) with its figure, which browsers show on hover. Every text
that reaches the SVG (labels, categories, titles) is escaped here, so a chart is safe to drop into an
autoescaped template as :class:`markupsafe.Markup`. Charts without data come out as a small "no data" chart,
never an error.

This module holds the drawing primitives (scales, ticks, axes, the SVG document) and the two grid charts, the
bar chart and the heatmap; :mod:`ragreplay.report.svg_plots` holds the interval, line-with-band, small-multiple
and box/strip plots built on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#1d4f91", "#c05a00", "#2e7d32", "#8e24aa", "#00838f", "#6d4c41")
"""Series colours, in order; distinguishable in print and for the common colour blindnesses."""

FONT = 'font-family="system-ui, sans-serif" font-size="11"'
"""The text attributes of every chart (the page's own sans-serif font, nothing loaded)."""

MAX_LABEL = 24
"""Characters of a category label drawn on a chart; the whole label stays in the mark's hover title."""

Formatter = Callable[[float], str]


def number(value: float) -> str:
    """A figure as a chart prints it: up to four significant digits, no trailing zeros."""
    return f"{value:.4g}"


def share(value: float) -> str:
    """A share in [0, 1] as a whole percentage (axis ticks)."""
    return f"{100 * value:.0f}%"


def short(label: str, limit: int = MAX_LABEL) -> str:
    """``label`` cut to ``limit`` characters with an ellipsis (the mark's title keeps it whole)."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def coord(value: float) -> str:
    """A coordinate with at most two decimals."""
    return f"{round(value, 2):g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [``low``, ``high``]: steps of 1, 2, 2.5 or 5 times a power of ten, about
    ``count`` of them, the first at or below ``low`` and the last at or above ``high``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high < low:
        low, high = high, low
    if high == low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    first = math.floor(low / step + 1e-9) * step
    ticks = []
    i = 0
    while True:
        tick = first + i * step
        ticks.append(round(tick, 10))
        if tick >= high - step * 1e-9:
            return ticks
        i += 1


@dataclass(frozen=True)
class Scale:
    """A linear map from a domain of figures to a range of pixels."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        """The pixel of ``value`` (clamped to the range)."""
        span = self.high - self.low or 1.0
        t = min(1.0, max(0.0, (value - self.low) / span))
        return self.start + t * (self.end - self.start)


def text(
    x: float, y: float, content: str, anchor: str = "start", css: str = "label", fill: str | None = None
) -> str:
    """An escaped text element (``fill``: its own colour instead of the stylesheet's)."""
    colour = "" if fill is None else f' style="fill:{fill}"'
    return f'<text class="{css}" x="{coord(x)}" y="{coord(y)}" text-anchor="{anchor}"{colour}>{escape(content)}</text>'


def title(content: str) -> str:
    """A mark's hover text, escaped."""
    return f"<title>{escape(content)}</title>"


def x_axis(
    scale: Scale, ticks: Sequence[float], y: float, fmt: Formatter, grid_to: float | None = None
) -> str:
    """A horizontal axis at ``y``: the line, a tick and a label per tick (and light grid lines up to
    ``grid_to``)."""
    parts = [
        f'<line class="axis-line" x1="{coord(scale.start)}" x2="{coord(scale.end)}" y1="{coord(y)}" y2="{coord(y)}"/>'
    ]
    for t in ticks:
        x = scale(t)
        if grid_to is not None:
            parts.append(
                f'<line class="grid" x1="{coord(x)}" x2="{coord(x)}" y1="{coord(grid_to)}" y2="{coord(y)}"/>'
            )
        parts.append(
            f'<line class="tick" x1="{coord(x)}" x2="{coord(x)}" y1="{coord(y)}" y2="{coord(y + 4)}"/>'
        )
        parts.append(text(x, y + 15, fmt(t), "middle", "tick-label"))
    return f'<g class="axis x-axis">{"".join(parts)}</g>'


def y_axis(
    scale: Scale, ticks: Sequence[float], x: float, fmt: Formatter, grid_to: float | None = None
) -> str:
    """A vertical axis at ``x``: the line, a tick and a label per tick (and grid lines across to
    ``grid_to``)."""
    parts = [
        f'<line class="axis-line" x1="{coord(x)}" x2="{coord(x)}" y1="{coord(scale.start)}" y2="{coord(scale.end)}"/>'
    ]
    for t in ticks:
        y = scale(t)
        if grid_to is not None:
            parts.append(
                f'<line class="grid" x1="{coord(x)}" x2="{coord(grid_to)}" y1="{coord(y)}" y2="{coord(y)}"/>'
            )
        parts.append(
            f'<line class="tick" x1="{coord(x - 4)}" x2="{coord(x)}" y1="{coord(y)}" y2="{coord(y)}"/>'
        )
        parts.append(text(x - 6, y + 4, fmt(t), "end", "tick-label"))
    return f'<g class="axis y-axis">{"".join(parts)}</g>'


STYLE = (
    "<style>.axis-line,.tick{stroke:#5b6773;stroke-width:1}.grid{stroke:#e6eaef;stroke-width:1}"
    ".tick-label,.label{fill:#3b4652}.empty-note{fill:#5b6773;font-style:italic}"
    ".cell-label{fill:#1d232a}.cell-label.dark{fill:#fff}</style>"
)
"""The charts' own styles (an inline ``<style>`` inside the SVG, which a ``style-src 'unsafe-inline'`` policy
allows), so a chart looks the same in every page that embeds it."""


def document(kind: str, width: float, height: float, label: str, body: Sequence[str]) -> Markup:
    """The ``<svg>`` of a chart of ``kind`` (a CSS class), ``width`` x ``height`` pixels, described by
    ``label`` (its ``aria-label`` and ``<title>``)."""
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {escape(kind)}" width="{coord(width)}" '
        f'height="{coord(height)}" viewBox="0 0 {coord(width)} {coord(height)}" role="img" '
        f'aria-label="{escape(label)}" '
        f"{FONT}>{title(label)}{STYLE}{''.join(body)}</svg>"
    )


def empty_chart(
    kind: str, label: str, width: float = 240, height: float = 32, note: str = "no data"
) -> Markup:
    """A chart with nothing to draw: its frame and ``note``, so a page keeps its layout and says why."""
    return document(
        kind + " empty", width, height, f"{label}: {note}", [text(8, height / 2 + 4, note, css="empty-note")]
    )


def bar_chart(
    bars: Sequence[tuple[str, float]],
    label: str,
    *,
    width: float = 360,
    height: float = 180,
    fmt: Formatter = number,
    color: str = PALETTE[0],
    hovers: Sequence[str] | None = None,
) -> Markup:
    """Vertical bars, one per (category, value), on a value axis from zero (or the lowest negative value) to
    a round tick above the highest; each bar's height is proportional to its value. ``hovers``: each bar's
    hover text (default ``category: value``), e.g. a histogram bin's whole range under a short category."""
    if not bars:
        return empty_chart("bar-chart", label, width)
    if hovers is not None and len(hovers) != len(bars):
        raise ValueError(f"bar_chart: {len(hovers)} hover texts for {len(bars)} bars")
    values = [v for _, v in bars]
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values))
    left, right, top, bottom = 48.0, 8.0, 10.0, 30.0
    scale = Scale(ticks[0], ticks[-1], height - bottom, top)
    slot = (width - left - right) / len(bars)
    body = [y_axis(scale, ticks, left, fmt, grid_to=width - right)]
    zero = scale(0.0)
    for i, (name, value) in enumerate(bars):
        y = scale(value)
        x = left + i * slot + slot * 0.15
        body.append(
            f'<rect class="bar" x="{coord(x)}" y="{coord(min(y, zero))}" width="{coord(slot * 0.7)}" '
            f'height="{coord(abs(zero - y))}" fill="{color}" data-category="{escape(name)}" data-value="{value!r}">'
            f"{title(hovers[i] if hovers is not None else f'{name}: {fmt(value)}')}</rect>"
        )
        body.append(
            text(x + slot * 0.35, height - bottom + 14, short(name, max(4, int(slot / 6.5))), "middle")
        )
    return document("bar-chart", width, height, label, body)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    label: str,
    *,
    cell_width: float = 120,
    cell_height: float = 40,
    row_label_width: float = 130,
    fmt: Formatter = number,
    color: str = PALETTE[0],
) -> Markup:
    """A grid of cells, one per (row, column), each shaded by its value against the largest (``None``: a
    blank, hatched-grey cell, for combinations that do not exist) with the value written in it."""
    if not rows or not columns:
        return empty_chart("heatmap", label)
    top = 34.0
    width = row_label_width + cell_width * len(columns) + 4
    height = top + cell_height * len(rows) + 4
    present = [v for row in values for v in row if v is not None]
    peak = max(present, default=0.0) or 1.0
    body = []
    for j, column in enumerate(columns):
        x = row_label_width + (j + 0.5) * cell_width
        shown = short(column, max(4, int(cell_width / 6.5)))
        body.append(
            f'<text class="label" x="{coord(x)}" y="20" text-anchor="middle">{escape(shown)}'
            f"{title(column)}</text>"
        )
    for i, (row, cells) in enumerate(zip(rows, values, strict=True)):
        y = top + i * cell_height
        body.append(text(row_label_width - 8, y + cell_height / 2 + 4, short(row), "end"))
        for j, (column, value) in enumerate(zip(columns, cells, strict=True)):
            x = row_label_width + j * cell_width
            attrs = (
                f'x="{coord(x + 1)}" y="{coord(y + 1)}" width="{coord(cell_width - 2)}" '
                f'height="{coord(cell_height - 2)}"'
            )
            where = f'data-row="{escape(row)}" data-column="{escape(column)}"'
            if value is None:
                body.append(
                    f'<rect class="cell none" {attrs} fill="#f4f6f9" {where}>{title(f"{row}, {column}: -")}</rect>'
                )
                continue
            strength = 0.08 + 0.82 * value / peak
            body.append(
                f'<rect class="cell" {attrs} fill="{color}" fill-opacity="{strength:.2f}" {where} '
                f'data-value="{value!r}">{title(f"{row}, {column}: {fmt(value)}")}</rect>'
            )
            dark = " dark" if strength > 0.55 else ""
            body.append(
                text(x + cell_width / 2, y + cell_height / 2 + 4, fmt(value), "middle", "cell-label" + dark)
            )
    return document("heatmap", width, height, label, body)
