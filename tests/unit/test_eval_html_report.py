"""The eval HTML report: every figure equal to the JSON report's, the distribution drawn from the same histogram,
user text (a question, a tag, an answer, an error) escaped, and the row list capped."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from ragreplay.core.eval import CriterionScore, MetricSummary, MetricValue, RowScores, summarize
from ragreplay.core.runs import RunStatus
from ragreplay.evaluation.run import EvalReport
from ragreplay.report.eval import render_json
from ragreplay.report.eval_html import (
    EVAL_REPORT_FORMATS,
    histogram_chart,
    render_eval_html,
    render_eval_report,
)
from ragreplay.store.evals import EvalRunRecord

EVIL = "<script>alert('x')</script>"
FIELDS = ("n", "undetermined", "mean", "p50", "p90")


def _row(i: int, **extra: Any) -> RowScores:
    undetermined = MetricValue.undetermined("no contexts")
    return RowScores(
        row_id=f"q{i}",
        tags=("hr", EVIL) if i % 2 else ("finance",),
        question=f"question {i} {EVIL}",
        answer=f"answer {i} <img src=x onerror=alert(1)>",
        metrics={
            "faithfulness": MetricValue.of(i / 10) if i % 3 else undetermined,
            "bleu": MetricValue.of((i * 7 % 10) / 10),
            "rubric.completeness": MetricValue.of(0.75),
        },
        rubric={"completeness": CriterionScore(score=4, reasoning=f"covers it {EVIL}")},
        **extra,
    )


def _report(n: int = 9) -> EvalReport:
    rows = [*(_row(i) for i in range(n)), RowScores(row_id="broken", error=f"judge call failed: {EVIL}")]
    rubric = {
        "name": "hr",
        "prompt_version": "rubric-1.x",
        "criteria": [{"name": "completeness", "weight": 2.0}],
    }
    record = EvalRunRecord(
        id="eval_html",
        created_at=datetime.now(UTC),
        status=RunStatus.DONE,
        dataset=f"rows{EVIL}.jsonl",
        judge="fake:default",
        prompt_version="claims-1.x",
        config={"rubric": rubric},
        config_hash="h",
        n_rows=len(rows),
    )
    return EvalReport(record=record, rows=tuple(rows), summary=summarize(rows, ("faithfulness", "bleu")))


class _MetricTables(HTMLParser):
    """Every ``table.metrics`` (overall, then one per tag): per metric its field cells and its bars' counts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, dict[str, Any]]] = []
        self._in_metrics = False
        self._metric: dict[str, Any] | None = None
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._in_metrics = a.get("class") == "metrics"
            if self._in_metrics:
                self.tables.append({})
        elif not self._in_metrics:
            return
        elif tag == "tr" and a.get("data-metric"):
            self._metric = self.tables[-1].setdefault(str(a["data-metric"]), {"counts": []})
        elif tag == "td" and self._metric is not None and a.get("data-field"):
            self._field = a["data-field"]
        elif tag == "rect" and self._metric is not None and a.get("class") == "bar":
            self._metric["counts"].append(int(float(a["data-value"] or 0)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._field = None
        elif tag == "tr":
            self._metric = None
        elif tag == "table":
            self._in_metrics = False

    def handle_data(self, data: str) -> None:
        if self._metric is not None and self._field:
            self._metric[self._field] = data.strip()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _expected(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        m["name"]: {
            "n": str(m["n"]),
            "undetermined": str(m["undetermined"]),
            "mean": _fmt(m["mean"]),
            "p50": _fmt(m["p50"]),
            "p90": _fmt(m["p90"]),
            "counts": list(m["histogram"]),
        }
        for m in metrics
    }


def test_every_figure_and_bin_equals_the_json_report() -> None:
    report = _report()
    data = json.loads(render_json(report))
    parser = _MetricTables()
    parser.feed(render_eval_html(report))
    overall, *per_tag = parser.tables
    assert overall == _expected(data["summary"]["metrics"])
    assert overall["faithfulness"]["undetermined"] == "3"  # q0, q3, q6 have no contexts
    assert sum(overall["bleu"]["counts"]) == 9
    assert per_tag == [_expected(ms) for ms in data["summary"]["per_tag"].values()]
    assert len(per_tag) == 3  # finance, hr and the <script> tag


def test_user_text_is_escaped_everywhere() -> None:
    page = render_eval_html(_report())
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert 'data-tag="&lt;script&gt;' in page  # the tag in an attribute, too
    assert "judge call failed: &lt;script&gt;" in page  # the errored row
    assert "covers it &lt;script&gt;" in page  # the rubric's reasoning
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_sections_rubric_reasons_errors_and_rows() -> None:
    page = render_eval_html(_report())
    for section in ('id="metrics"', 'id="tags"', 'id="undetermined"', 'id="errored"', 'id="rows"'):
        assert section in page
    assert "rubric, on the judge&#39;s 1-5 scale" in page
    assert '<td>completeness</td><td class="num">2</td>' in page  # its weight
    assert page.count('<details class="row"') == 10
    assert "<script" not in page and not re.search(r'(src|href)="https?://', page)  # nothing loaded


def test_the_row_list_is_capped_but_the_figures_cover_every_row() -> None:
    report = _report()
    page = render_eval_html(report, rows_shown=4)
    assert page.count('<details class="row"') == 4
    assert "Rows (4 of 10: --format json lists all)" in page
    parser = _MetricTables()
    parser.feed(page)
    assert parser.tables[0]["bleu"]["n"] == "9"


def test_bars_scale_to_the_fullest_bin_and_keep_empty_bins_visible() -> None:
    metric = MetricSummary(name="m", n=6, undetermined=0, histogram=(0, 2, 0, 0, 0, 0, 0, 0, 0, 4))
    chart = histogram_chart(metric)
    assert chart is not None
    svg = ET.fromstring(str(chart))
    bars = [e for e in svg.iter("{http://www.w3.org/2000/svg}rect") if e.get("class") == "bar"]
    assert [int(float(b.get("data-value") or -1)) for b in bars] == list(metric.histogram)
    heights = [float(b.get("height") or -1) for b in bars]
    assert heights[9] == pytest.approx(2 * heights[1]) and heights[1] > 0 and heights[0] == 0
    labels = ["".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert {"0", "0.1", "0.9"} <= set(labels)  # every bin named on the axis, an empty one too
    assert "".join(bars[1].itertext()) == "0.10-0.20: 2 row(s)"  # the bin's range in its hover text
    assert histogram_chart(MetricSummary(name="m", n=0, undetermined=3)) is None


def test_html_is_one_of_the_formats_and_an_unknown_one_is_refused() -> None:
    assert EVAL_REPORT_FORMATS == ("text", "md", "json", "html")
    assert render_eval_report(_report(), "html").startswith("<!doctype html>")
    assert render_eval_report(_report(), "md").startswith("# eval run")
    with pytest.raises(ValueError, match="unknown eval report format 'pdf'"):
        render_eval_report(_report(), "pdf")
