"""The reports' and the dashboard's charts in a real headless chromium: every chart and every mark in it is
drawn with a non-zero size, no console error (a CSP violation included), nothing requested off the machine, and
the collapsed case groups open on a click."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ragreplay.report import render
from ragreplay.report.compare_json import render_comparison

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
sys.path.insert(0, str(Path(__file__).parent))
from test_compare_html import comparison
from test_dashboard_browser import served  # noqa: F401  (the served dashboard fixture)
from test_report_charts import run_summary

pytestmark = pytest.mark.browser

MARKS = ", ".join(
    f"svg.chart {mark}"
    for mark in ("rect.bar", "rect.cell", "g.interval circle", "circle.point", "g.box rect")
)


def assert_every_chart_drawn(page: Any, expected: int) -> None:
    charts = page.locator("svg.chart")
    assert charts.count() == expected
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0, charts.nth(i).get_attribute(
            "aria-label"
        )
    sizes = page.locator(MARKS).evaluate_all(
        "marks => marks.map(m => { const b = m.getBBox(); return [b.width, b.height]; })"
    )
    assert sizes, "the charts draw marks"
    assert all(w > 0 or h > 0 for w, h in sizes)  # a zero count draws a flat bar, never nothing at all
    assert page.locator("svg.chart.empty").count() == 0


# first: the served dashboard's store is judged (asyncio.run) before Playwright's loop starts
def test_dashboard_charts_and_word_diff_render_under_its_csp(served: Any, page: Any) -> None:  # noqa: F811
    base, _ = served
    page.goto(base + "/")
    n_challengers = page.locator("#headline .card").count()
    assert_every_chart_drawn(page, n_challengers + 3)  # a day chart each, per tag, latency, cost
    page.goto(base + "/rows/script")
    diff = page.locator("#word-diff")
    assert diff.locator("ins").count() >= 1
    assert "<script>" in diff.locator("ins").first.inner_text()  # the challenger's markup, as text
    assert diff.locator("ins").first.bounding_box()["width"] > 0
    assert page.evaluate("document.scripts.length") == 0
    assert page.problems == []


def test_replay_and_compare_reports_draw_every_chart(page: Any, tmp_path: Path) -> None:
    replay = tmp_path / "replay.html"
    replay.write_text(render(run_summary(), "html"), encoding="utf-8")
    page.goto(replay.as_uri())
    assert_every_chart_drawn(page, 3)
    group = page.locator('details[data-group="BAD_NO_FIT"]')
    assert not group.locator(".case").first.is_visible()  # collapsed
    group.locator("summary").first.click()
    group.locator("details.sub summary").first.click()
    assert group.locator(".case").first.is_visible()
    assert page.problems == []

    compare = tmp_path / "compare.html"
    compare.write_text(render_comparison(comparison(), "html"), encoding="utf-8")
    page.goto(compare.as_uri())
    assert_every_chart_drawn(page, 4)
    assert page.evaluate("document.scripts.length") == 0
    assert page.problems == []
