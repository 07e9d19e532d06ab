"""``--format html`` of a gate: one self-contained page on the reports' skeleton whose charts draw the JSON
report's figures (each bar's value, interval and threshold; the outcomes per stratum; latency and cost per side),
user text escaped, the sections the text report has, and the items collapsed by stratum and outcome."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Literal
from xml.etree import ElementTree as ET

import pytest
from markupsafe import escape

from ragreplay.core.compare_stats import clopper_pearson
from ragreplay.core.failure_tags import FailureTagCount, FailureTags
from ragreplay.core.gate import GatePolicy, ItemOutcome, evaluate
from ragreplay.core.regset import RegressionSetRecord, Stratum
from ragreplay.core.runs import RunStatus
from ragreplay.gate.reference_metrics import reference_metrics
from ragreplay.gate.run import GateReport
from ragreplay.report.gate import gate_judge_notes, render_gate
from ragreplay.report.gate_html import GATE_REPORT_FORMATS, render_gate_html, render_gate_report
from ragreplay.store.gates import GateRecord

NS = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert('x')</script>"


def _outcome(stratum: Stratum, i: int) -> ItemOutcome:
    key = f"{stratum}{i}"
    question = f"question {key} {EVIL}"
    if i % 9 == 8:
        return ItemOutcome(key=key, stratum=stratum, question=question, error=f"timeout {EVIL}")
    winner: Literal["champion", "challenger", "tie"] = ("challenger", "champion", "tie", "challenger")[i % 4]
    score = 4.5 if i % 3 else 2.0
    return ItemOutcome(
        key=key,
        stratum=stratum,
        question=question,
        winner=None if i % 11 == 10 else winner,
        consistent=True,
        challenger_score=score,
        champion_score=3.0,
        matches_reference=True if (stratum == "wound" and i == 1) else None,
    )


def gate_report(policy: GatePolicy | None = None, judge: str = "fake:default") -> GateReport:
    """A finished gate over 3 strata with every outcome, payloads with answers, latency and cost."""
    policy = policy or GatePolicy()
    sizes: tuple[tuple[Stratum, int], ...] = (("win", 12), ("contested", 24), ("wound", 15))
    outcomes = [_outcome(s, i) for s, n in sizes for i in range(n)]
    payloads: dict[str, dict[str, Any]] = {
        o.key: {
            "outcome": o.model_dump(mode="json"),
            "champion_answer": f"champion {o.key}",
            "challenger_answer": f"challenger {o.key} {EVIL}",
            "reason": f"because {EVIL}",
            "cost_usd": 0.003,
            "target_cost_usd": {"champion": 0.001, "challenger": None if k % 5 == 0 else 0.002 + k / 1e4},
            "latency_ms": {"champion": 100.0 + k, "challenger": 150.0 + 2 * k},
        }
        for k, o in enumerate(outcomes)
    }
    config = {
        "champion": {"name": "prod"},
        "challenger": {"name": f"new {EVIL}"},
        "judge": {"spec": judge, "name": judge, "prompt_version": "pw-1"},
        "fit_judge": {"spec": "local", "name": "local:fit"},
    }
    now = datetime.now(UTC)
    record = GateRecord(
        id="gate_html",
        created_at=now,
        status=RunStatus.DONE,
        set_id="rs_v1",
        challenger="new",
        config=config,
        config_hash="h",
        n_items=len(outcomes),
    )
    regset = RegressionSetRecord(id="rs_v1", version=1, created_at=now, counts={"win": 12})
    verdict = evaluate(outcomes, policy)
    cost = sum(p["cost_usd"] for p in payloads.values())
    return GateReport(record, regset, verdict, policy, outcomes, payloads, judge == "local", cost)


FAILURE_TAGS = FailureTags(
    reviews=5, items=4, tags=[FailureTagCount(tag=f"stale {EVIL}", items=3, reviews=4)]
)


def charts(page: str) -> dict[str, ET.Element]:
    found = re.findall(r'<figure class="chart" id="([^"]+)">(<svg.*?</svg>)', page, re.S)
    return {fid: ET.fromstring(svg) for fid, svg in found}


def test_the_page_is_self_contained_escaped_and_has_every_chart() -> None:
    page = render_gate_html(gate_report(), FAILURE_TAGS)
    assert page.startswith("<!doctype html>")
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r'(src|href)="https?://', page)
    assert "timeout &lt;script&gt;" in page and "because &lt;script&gt;" in page
    drawn = charts(page)
    expected = {"chart-bars", "chart-strata", "chart-wounds", "chart-latency", "chart-cost"}
    assert set(drawn) == expected | {"chart-failure-tags"}
    assert all("empty" not in (svg.get("class") or "") for svg in drawn.values())
    assert set(charts(render_gate_html(gate_report()))) == expected  # no failure tags, no tag chart


def test_the_bars_draw_the_json_reports_value_interval_and_threshold() -> None:
    report = gate_report()
    data = json.loads(render_gate(report, "json"))
    marks = charts(render_gate_html(report))["chart-bars"]
    drawn = {g.get("data-label"): g for g in marks.iter(f"{NS}g") if g.get("data-label")}
    ticks = [line for line in marks.iter(f"{NS}line") if line.get("class") == "threshold"]
    assert len(drawn) == len(ticks) == 3
    for bar, tick in zip(data["verdict"]["bars"], ticks, strict=True):
        mark = drawn[f"{bar['name']}: {bar['decision']}"]
        assert float(mark.get("data-value") or -1) == bar["value"]
        assert (float(mark.get("data-low") or -1), float(mark.get("data-high") or -1)) == (
            bar["low"],
            bar["high"],
        )
        threshold = bar["threshold"] / bar["n"] if bar["name"] == "wins" else bar["threshold"]
        assert float(tick.get("data-threshold") or -1) == threshold
        hover = "".join(mark.itertext())
        assert f"/{bar['n']}" in hover or f"of {bar['n']} judged" in hover  # n in the hover text


def test_the_stratum_panels_and_side_plots_draw_the_json_items() -> None:
    report = gate_report()
    data = json.loads(render_gate(report, "json"))
    drawn = charts(render_gate_html(report))
    for panel in drawn["chart-strata"].iter(f"{NS}g"):
        if panel.get("class") != "panel":
            continue
        stratum = (panel.get("data-panel") or "").split(" ")[0]
        mine = [i for i in data["items"] if i["stratum"] == stratum and i["error"] is None]
        judged = [i for i in mine if i["winner"] is not None]
        won = sum(i["winner"] == "challenger" for i in judged)
        mark = next(g for g in panel.iter(f"{NS}g") if g.get("data-label") == "challenger won")
        assert float(mark.get("data-value") or -1) == won / len(judged)
        low, high = clopper_pearson(won, len(judged), 0.95)
        assert (float(mark.get("data-low") or -1), float(mark.get("data-high") or -1)) == (low, high)
    boxes = {g.get("data-group"): g for g in drawn["chart-latency"].iter(f"{NS}g") if g.get("data-group")}
    answered = [i for i in data["items"] if i["error"] is None]
    assert int(boxes["challenger"].get("data-n") or 0) == len(answered)
    costs = {g.get("data-group"): g for g in drawn["chart-cost"].iter(f"{NS}g") if g.get("data-group")}
    priced = [i for i in answered if i["target_cost_usd"]["challenger"] is not None]
    assert int(costs["challenger"].get("data-n") or 0) == len(priced) < len(answered)


def test_sections_lists_warnings_and_collapsed_groups() -> None:
    report = gate_report()
    page = render_gate_html(report, FAILURE_TAGS)
    assert f'data-decision="{report.verdict.decision}"' in page
    assert "interval rule, 95% Clopper-Pearson intervals" in page
    for reason in report.verdict.reasons:
        assert str(reason).replace("'", "&#39;") in page
    listed = {b.name: len(b.listed) for b in report.verdict.bars if b.listed}
    for name, n in listed.items():
        assert f'data-listed="{name}" data-count="{n}"' in page
    groups = dict(re.findall(r'<details class="group" data-group="([^"]+)" data-count="(\d+)"', page))
    assert sum(map(int, groups.values())) == len(report.outcomes)
    assert list(groups)[:3] == ["win: lost", "contested: champion preferred", "wound: still open"]
    assert "<details open" not in page  # collapsed
    fixed = [o for o in report.outcomes if o.stratum == "wound" and o.fixed(4.0)]
    assert f"{len(fixed)} of 14 answered wound(s) fixed" in page
    assert "stale &lt;script&gt;" in page and 'id="failure-tags"' in page
    assert 'id="metrics"' not in page


def test_the_lexical_metrics_and_the_local_judge_card_when_present() -> None:
    report = gate_report(judge="local")
    references = {o.key: f"champion {o.key}" for o in report.outcomes if o.stratum == "wound"}
    metrics = reference_metrics(report, references)
    page = render_gate_html(report, None, metrics)
    assert 'id="metrics"' in page
    for m in metrics.diff.metrics:
        assert f'<tr data-metric="{m.name}"><td>{m.name}</td><td class="num">{m.n}</td>' in page
    notes = gate_judge_notes(report)
    assert notes, "a local judge comes with its card"
    text = render_gate(report, "text", None, metrics)
    for note in notes:  # the cards the text report shows
        assert note in text and f'<p class="note judge-note">{escape(note)}</p>' in page


def test_html_is_a_gate_format_and_others_pass_through() -> None:
    assert GATE_REPORT_FORMATS == ("text", "md", "json", "junit", "html")
    report = gate_report()
    assert render_gate_report(report, "html").startswith("<!doctype html>")
    assert render_gate_report(report, "md") == render_gate(report, "md")
    with pytest.raises(ValueError, match="unknown gate format"):
        render_gate_report(report, "pdf")
