"""The server-drawn SVG charts: valid XML, escaped text, an accessible label and a hover title per mark, axes
with round ticks, marks proportional to their figures, and empty input drawn as a "no data" chart."""

from __future__ import annotations

from collections.abc import Callable
from xml.etree import ElementTree as ET

import pytest
from markupsafe import Markup

from ragreplay.report.svg import bar_chart, heatmap, nice_ticks
from ragreplay.report.svg_plots import Interval, Series, box_plot, interval_plot, line_chart, small_multiples

NS = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert('x')</script> & \"quoted\""


def parse(chart: Markup) -> ET.Element:
    root = ET.fromstring(str(chart))
    assert root.tag == f"{NS}svg"
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{NS}title") is not None
    return root


def _all(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    found = root.iter(f"{NS}{tag}")
    return [e for e in found if cls is None or cls in (e.get("class") or "").split()]


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in _all(root, "text")]


CHARTS: dict[str, Callable[[str], Markup]] = {
    "bar": lambda s: bar_chart([(s, 3.0), ("b", 1.0)], s),
    "heatmap": lambda s: heatmap([s, "r2"], ["c1", s], [[1, 2], [None, 4]], s),
    "interval": lambda s: interval_plot([Interval(s, 0.5, 0.3, 0.7, "5/10")], s),
    "multiples": lambda s: small_multiples([(s, [Interval(s, 0.5, 0.3, 0.7)])], s),
    "line": lambda s: line_chart(["d1", s], [Series(s, [Interval(s, 0.2, 0.1, 0.3), None])], s),
    "box": lambda s: box_plot([(s, [1.0, 2.0, 3.0])], s, unit="ms"),
}


@pytest.mark.parametrize("kind", sorted(CHARTS))
def test_every_chart_is_xml_with_its_text_escaped_and_a_title_per_mark(kind: str) -> None:
    root = parse(CHARTS[kind](EVIL))
    assert not _all(root, "script")  # the label is text, never an element
    assert root.get("aria-label") == EVIL
    assert any(EVIL[:12] in t for t in _texts(root))  # drawn as text (cut when long) ...
    assert any(EVIL in "".join(t.itertext()) for t in _all(root, "title"))  # ... and whole in a hover title
    marks = [*_all(root, "rect", "bar"), *_all(root, "rect", "cell"), *_all(root, "g", "interval")]
    marks += [*_all(root, "circle", "point"), *_all(root, "g", "box")]
    assert marks, "a chart with data draws marks"
    for mark in marks:
        assert mark.find(f"{NS}title") is not None, ET.tostring(mark)


@pytest.mark.parametrize(
    "chart",
    [
        bar_chart([], "nothing"),
        heatmap([], [], [], "nothing"),
        interval_plot([], "nothing"),
        small_multiples([], "nothing"),
        line_chart([], [], "nothing"),
        line_chart(["d1", "d2"], [Series("s", [None, Interval("d2", None, 0, 1)])], "nothing"),
        box_plot([("champion", [])], "nothing"),
    ],
)
def test_empty_data_is_a_no_data_chart(chart: Markup) -> None:
    root = parse(chart)
    assert "empty" in (root.get("class") or "")
    assert "no data" in _texts(root)


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0, 87) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(120, 480) == [100, 200, 300, 400, 500]
    assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(3, 3)[0] <= 3 <= nice_ticks(3, 3)[-1]


def test_bar_heights_are_proportional_to_the_values_on_a_ticked_axis() -> None:
    root = parse(bar_chart([("a", 10.0), ("b", 40.0), ("c", 0.0)], "cases per verdict"))
    bars = {b.get("data-category"): float(b.get("height") or 0) for b in _all(root, "rect", "bar")}
    assert bars["b"] == pytest.approx(4 * bars["a"])
    assert bars["c"] == 0
    ticks = [t for t in _all(root, "text", "tick-label")]
    assert ["".join(t.itertext()) for t in ticks] == ["0", "10", "20", "30", "40"]
    # the tallest bar reaches the top tick
    top_tick_y = float(ticks[-1].get("y") or 0) - 4
    tallest = next(b for b in _all(root, "rect", "bar") if b.get("data-category") == "b")
    assert float(tallest.get("y") or 0) == pytest.approx(top_tick_y)


def test_heatmap_shades_by_value_and_leaves_missing_cells_blank() -> None:
    root = parse(heatmap(["GOOD", "BAD"], ["fits", "differs"], [[8, 2], [1, None]], "verdicts"))
    cells = {(c.get("data-row"), c.get("data-column")): c for c in _all(root, "rect", "cell")}
    opacity = {k: float(c.get("fill-opacity") or 0) for k, c in cells.items() if c.get("data-value")}
    assert opacity[("GOOD", "fits")] > opacity[("GOOD", "differs")] > opacity[("BAD", "fits")]
    assert "none" in (cells[("BAD", "differs")].get("class") or "")
    assert {"8", "2", "1"} <= set(_texts(root))


def test_interval_plot_puts_dot_and_whisker_where_the_figures_are() -> None:
    items = [Interval("kept", 0.5, 0.25, 0.75, "10/20"), Interval("none yet", None, 0.0, 1.0, "0/0")]
    root = parse(interval_plot(items, "rates", width=500, label_width=100))
    (mark,) = _all(root, "g", "interval")
    dot = mark.find(f"{NS}circle")
    whisker = mark.find(f"{NS}line")
    assert dot is not None and whisker is not None
    # the axis runs from x=100 (0%) to x=484 (100%)
    assert float(dot.get("cx") or 0) == pytest.approx(292)
    assert float(whisker.get("x1") or 0) == pytest.approx(196)
    assert float(whisker.get("x2") or 0) == pytest.approx(388)
    assert ["".join(t.itertext()) for t in _all(root, "text", "tick-label")] == [
        "0%",
        "25%",
        "50%",
        "75%",
        "100%",
    ]
    assert "50% [25%–75%] 10/20" in "".join(mark.itertext())
    assert "– 0/0" in _texts(root)  # an undefined figure says so instead of drawing a dot


def test_line_chart_breaks_at_missing_days_and_bands_each_stretch() -> None:
    p = [Interval("d", 0.5, 0.4, 0.6), Interval("d", 0.6, 0.5, 0.7), None, Interval("d", 0.8, 0.7, 0.9)]
    root = parse(line_chart(["d1", "d2", "d3", "d4"], [Series("agreement", p)], "agreement per day"))
    assert len(_all(root, "polyline", "line")) == 2
    assert len(_all(root, "polygon", "band")) == 2
    points = _all(root, "circle", "point")
    assert [pt.get("data-x") for pt in points] == ["d1", "d2", "d4"]
    ys = [float(pt.get("cy") or 0) for pt in points]
    assert ys[0] > ys[1] > ys[2]  # a higher share is drawn higher up


def test_small_multiples_share_one_axis_across_panels() -> None:
    panels = [(f"lang={x}", [Interval("kept", v, v - 0.1, v + 0.1)]) for x, v in (("en", 0.2), ("nl", 0.8))]
    root = parse(small_multiples(panels, "per tag", columns=2))
    assert [g.get("data-panel") for g in _all(root, "g", "panel")] == ["lang=en", "lang=nl"]
    dots = [float(c.get("cx") or 0) for g in _all(root, "g", "interval") for c in g.iter(f"{NS}circle")]
    panel_width = 250
    assert dots[1] - panel_width - dots[0] > 0  # 80% sits further right in its panel than 20% in its own


def test_box_plot_marks_the_median_and_caps_the_strip() -> None:
    slow = [float(v) for v in range(1, 1001)]
    root = parse(box_plot([("champion", [10.0, 20.0, 30.0]), ("challenger", slow)], "latency", unit="ms"))
    boxes = {b.get("data-group"): b for b in _all(root, "g", "box")}
    assert float(boxes["champion"].get("data-median") or 0) == 20.0
    assert float(boxes["challenger"].get("data-median") or 0) == pytest.approx(500.5)
    assert len(list(boxes["challenger"].iter(f"{NS}circle"))) == 400
    assert "n=1000" in "".join(boxes["challenger"].itertext())
    assert "1000 ms" in _texts(root)  # the axis reaches the largest value, with its unit


def test_an_interval_with_a_threshold_draws_a_dashed_tick_there_even_without_a_value() -> None:
    items = [Interval("bar", 0.6, 0.4, 0.8, "6/10", threshold=0.55), Interval("none", None, 0, 1, "0/0", 0.3)]
    root = parse(interval_plot(items, "bars", width=460, label_width=170))
    ticks = _all(root, "line", "threshold")
    assert [float(t.get("data-threshold") or -1) for t in ticks] == [0.55, 0.3]
    scale_x = 170 + 0.55 * (460 - 16 - 170)
    assert float(ticks[0].get("x1") or 0) == pytest.approx(scale_x, abs=0.01)
    assert "threshold 55%" in "".join(ticks[0].itertext())
    assert not _all(parse(interval_plot([Interval("x", 0.5, 0.4, 0.6)], "plain")), "line", "threshold")


def test_bar_hover_texts_replace_the_default_and_must_match_the_bars() -> None:
    root = parse(bar_chart([("0.1", 2.0), ("0.2", 4.0)], "bins", hovers=["0.10-0.20: 2 rows", "x"]))
    assert "".join(_all(root, "rect", "bar")[0].itertext()) == "0.10-0.20: 2 rows"
    with pytest.raises(ValueError, match="1 hover texts for 2 bars"):
        bar_chart([("a", 1.0), ("b", 2.0)], "bins", hovers=["a"])
