"""``--format html`` of a comparison: one self-contained page whose charts draw the JSON report's figures,
user text escaped, the cases collapsed into groups by challenger and outcome."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree as ET

from ragreplay.compare.grid import ComparisonSummary, build_summary
from ragreplay.core.compare_stats import CompareRow
from ragreplay.core.types import Fit
from ragreplay.report.compare_json import render_comparison

NS = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert('x')</script>"


def comparison(n: int = 40) -> ComparisonSummary:
    """Two challengers on ``n`` cases in two languages, with every outcome."""
    rows = []
    for i in range(n):
        for name, slower in (("fast", 0.0), ("deep", 300.0)):
            failed = i % 13 == 12
            rows.append(
                CompareRow(
                    case_id=f"c{i}",
                    challenger=name,
                    question=f"question {i} {EVIL}",
                    tags={"language": "nl" if i % 4 == 0 else "en"},
                    champion_answer=f"champion {i}",
                    challenger_answer=f"{name} {i} {EVIL}",
                    agreement=None if failed else (Fit.FIT if i % 3 == 0 else Fit.NO_FIT),
                    preference=None if failed else ("challenger" if i % 2 else "champion"),
                    consistent=True,
                    champion_latency_ms=100.0 + i,
                    challenger_latency_ms=None if failed else 100.0 + i + slower,
                    champion_cost_usd=0.001,
                    challenger_cost_usd=0.002 + i / 10000,
                    error="timeout" if failed else None,
                )
            )
    return build_summary(
        champion="prod",
        challenger_names=["fast", "deep"],
        rows=rows,
        outcomes={},
        judge="fake:default",
        judge_prompt_version="p1",
        fit_judge="fake:default",
        order="both",
        cases="demo",
        n_cases=n,
        comparison_id="cmp_1",
    )


def charts(page: str) -> dict[str, ET.Element]:
    found = re.findall(r'<figure class="chart" id="([^"]+)">(<svg.*?</svg>)', page, re.S)
    return {fid: ET.fromstring(svg) for fid, svg in found}


def test_the_page_is_self_contained_escaped_and_has_every_chart() -> None:
    page = render_comparison(comparison(), "html")
    assert page.startswith("<!doctype html>")
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r'(src|href)="https?://', page)
    drawn = charts(page)
    assert set(drawn) == {"chart-headline", "chart-latency", "chart-cost", "chart-tags"}
    assert all("empty" not in (svg.get("class") or "") for svg in drawn.values())


def test_charts_draw_the_json_reports_figures() -> None:
    summary = comparison()
    data = json.loads(render_comparison(summary, "json"))
    drawn = charts(render_comparison(summary, "html"))
    marks = {g.get("data-label"): g for g in drawn["chart-headline"].iter(f"{NS}g") if g.get("data-label")}
    for c in data["challengers"]:
        agree = marks[f"{c['name']}: agreement"]
        assert float(agree.get("data-value") or -1) == c["agreement"]["value"]
        assert float(agree.get("data-low") or -1) == c["agreement"]["low"]
        preferred = marks[f"{c['name']}: preferred"]
        assert float(preferred.get("data-value") or -1) == c["preference_disagreements"]["share"]
        assert float(preferred.get("data-high") or -1) == c["preference_disagreements"]["high"]
    boxes = {b.get("data-group"): b for b in drawn["chart-latency"].iter(f"{NS}g") if b.get("data-group")}
    for c in data["challengers"]:
        assert float(boxes[c["name"]].get("data-median") or -1) == c["latency"]["challenger_p50"]
        champion = boxes[f"champion (vs {c['name']})"]
        assert float(champion.get("data-median") or -1) == c["latency"]["champion_p50"]
        assert int(champion.get("data-n") or 0) == c["n_cases"] - c["n_errors"]  # the rows both answered
    panels = {p.get("data-panel") for p in drawn["chart-tags"].iter(f"{NS}g") if p.get("data-panel")}
    assert panels == {f"{t['tag']}={t['value']}" for c in data["challengers"] for t in c["by_tag"]}


def test_cases_collapse_by_challenger_and_outcome() -> None:
    summary = comparison()
    page = render_comparison(summary, "html")
    groups = dict(re.findall(r'<details class="group" data-group="([^"]+)" data-count="(\d+)">', page))
    assert sum(int(n) for n in groups.values()) == len(summary.rows)
    errors = sum(r.error is not None for r in summary.rows if r.challenger == "fast")
    assert int(groups["fast: error"]) == errors
    same = sum(r.agreement == Fit.FIT and r.error is None for r in summary.rows if r.challenger == "deep")
    assert int(groups["deep: same answer"]) == same
    assert next(iter(groups)) == "fast: error"  # failures first
    assert 'data-subgroup="language=nl"' in page
