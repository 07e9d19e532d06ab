"""The replay HTML report's pictures: the charts are there and draw the JSON report's figures, and the case list
is collapsed into verdict groups with counts, split by language, instead of one flat list."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from xml.etree import ElementTree as ET

from builders import make_case
from ragreplay.core.run_summary import RunSummary, summarize
from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Answer, Feedback, Fit, Judgment, Verdict
from ragreplay.report import render

NS = "{http://www.w3.org/2000/svg}"
VERDICT_OF = {
    (Feedback.GOOD, Fit.FIT): Verdict.GOOD_FIT,
    (Feedback.GOOD, Fit.NO_FIT): Verdict.GOOD_NO_FIT,
    (Feedback.BAD, Fit.FIT): Verdict.BAD_FIT,
    (Feedback.BAD, Fit.NO_FIT): Verdict.BAD_NO_FIT,
}


def run_summary(n: int = 60) -> RunSummary:
    """``n`` cases in English and Dutch with every verdict, a few errors."""
    run = RunRecord(
        id="run_charts",
        created_at=datetime.now(UTC),
        status=RunStatus.DONE,
        target_name="challenger",
        target_version="v1",
        judge_name="fake:default",
        judge_prompt_version="p1",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="c",
        dataset_hash="d",
        n_cases=n,
    )
    cases, results = {}, []
    for i in range(n):
        feedback = Feedback.GOOD if i % 3 else Feedback.BAD
        fit = Fit.FIT if i % 4 else Fit.NO_FIT
        case = make_case(
            id=f"case_{i}",
            conversation_id=f"conv_{i}",
            feedback=feedback,
            tags={"language": "nl" if i % 5 == 0 else "en", "department": "hr"},
        )
        cases[case.id] = case
        if i % 17 == 16:
            results.append(
                ResultRecord(run_id=run.id, case_id=case.id, status=ResultStatus.ERROR, error="boom")
            )
            continue
        results.append(
            ResultRecord(
                run_id=run.id,
                case_id=case.id,
                status=ResultStatus.DONE,
                answer=Answer(text=f"answer {i}"),
                judgment=Judgment(fit=fit, reason="r", judge="fake:default", prompt_version="p1"),
                verdict=VERDICT_OF[(feedback, fit)],
            )
        )
    return summarize(run, results, cases, {})


def charts(page: str) -> dict[str, ET.Element]:
    """Every inline SVG of the page, parsed, by the id of its figure."""
    found = re.findall(r'<figure class="chart" id="([^"]+)">(<svg.*?</svg>)', page, re.S)
    return {fid: ET.fromstring(svg) for fid, svg in found}


def test_every_chart_is_drawn_and_accessible() -> None:
    drawn = charts(render(run_summary(), "html"))
    assert set(drawn) == {"chart-matrix", "chart-rates", "chart-tags"}
    for svg in drawn.values():
        assert svg.get("role") == "img" and svg.get("aria-label")
        assert "empty" not in (svg.get("class") or "")


def test_chart_figures_equal_the_json_reports() -> None:
    summary = run_summary()
    data = json.loads(render(summary, "json"))
    drawn = charts(render(summary, "html"))
    cells = {
        (c.get("data-row"), c.get("data-column")): float(c.get("data-value") or -1)
        for c in drawn["chart-matrix"].iter(f"{NS}rect")
        if c.get("data-value")
    }
    counts = data["rates"]["counts"]
    assert cells[("users said GOOD", "new answer fits the old one")] == counts["GOOD_FIT"]
    assert cells[("users said GOOD", "new answer differs")] == counts["GOOD_NO_FIT"]
    assert cells[("users said BAD", "new answer fits the old one")] == counts["BAD_FIT"]
    assert cells[("users said BAD", "new answer differs")] == counts["BAD_NO_FIT"]
    rates = {g.get("data-label"): g for g in drawn["chart-rates"].iter(f"{NS}g") if g.get("data-label")}
    for key, label in (("good_maintenance", "good maintenance"), ("bad_change", "bad change")):
        assert float(rates[label].get("data-value") or -1) == data["rates"][key]["value"]
        assert float(rates[label].get("data-low") or -1) == data["rates"][key]["low"]
        assert float(rates[label].get("data-high") or -1) == data["rates"][key]["high"]
    panels = [p.get("data-panel") for p in drawn["chart-tags"].iter(f"{NS}g") if p.get("data-panel")]
    assert panels == [f"{t['tag']}={t['value']}" for t in data["by_tag"]]


def test_cases_collapse_into_verdict_groups_with_counts_split_by_language() -> None:
    summary = run_summary()
    page = render(summary, "html")
    groups = re.findall(r'<details class="group [A-Z_]+" data-group="([A-Z_]+)" data-count="(\d+)">', page)
    assert [g for g, _ in groups][:2] == ["BAD_NO_FIT", "GOOD_NO_FIT"]  # review first
    assert sum(int(n) for _, n in groups) == len(summary.cases)
    counts = {g: int(n) for g, n in groups}
    assert counts["ERROR"] == summary.n_errors
    for verdict in Verdict:
        assert counts.get(str(verdict), 0) == summary.rates.counts[verdict]
    subs = re.findall(r'data-subgroup="(language=\w+)" data-count="(\d+)"', page)
    assert {s for s, _ in subs} == {"language=en", "language=nl"}
    assert sum(int(n) for _, n in subs) == len(summary.cases)
    assert " open" not in re.findall(r"<details[^>]*>", page)[0]  # collapsed: a short page until opened
