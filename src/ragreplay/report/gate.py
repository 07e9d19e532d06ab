"""A gate's report: text and Markdown (also the pull-request comment), JSON, and JUnit XML (a test case per bar)."""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

from ragreplay.core.costs import cost_text
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.gate import Bar
from ragreplay.gate.reference_metrics import ReferenceMetrics
from ragreplay.gate.run import GateReport
from ragreplay.report.failure_tags import failure_tags_markdown
from ragreplay.report.gate_metrics import metrics_markdown, metrics_text
from ragreplay.report.labels import failure_tag_rows, failure_tags_head, local_judge_notes, md_text

GATE_FORMATS = ("text", "md", "json", "junit")
COMMENT_MARKER = "<!-- ragreplay-gate -->"
"""The first line of the pull-request comment, so a CI job can find and update its own comment."""

HEADLINES = {
    "pass": "PASS: the challenger may replace the champion",
    "fail": "FAIL: the challenger may not replace the champion",
    "inconclusive": "INCONCLUSIVE: the set cannot decide",
    "error": "COULD NOT RUN",
}
"""The decision's line, first in every report."""
LISTED_TITLES = {
    "wins": "wins lost",
    "contested": "contested pairs the champion won",
    "wounds": "wounds still open",
}
"""What each bar lists (``Bar.listed``), as the reports title the list."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _bar_line(bar: Bar) -> str:
    interval = f"95% CI {bar.low:.1%}-{bar.high:.1%}"
    if bar.name == "wins":
        figure = f"{bar.k} lost of {bar.n} judged (allowed {bar.threshold:g}; loss rate {interval})"
    elif bar.name == "contested":
        figure = f"{bar.k}/{bar.n} = {_pct(bar.value)}, {interval}, threshold {bar.threshold:.0%} ({bar.ties} ties)"
    else:
        figure = f"{bar.k}/{bar.n} fixed = {_pct(bar.value)}, {interval}, threshold {bar.threshold:.1%}"
    extra = f"; {bar.unscored} not scored" if bar.unscored else ""
    return f"{bar.decision.upper():<12} {bar.name:<10} {figure}{extra} [{bar.rule} rule]"


BAR_COLUMNS = ("bar", "decision", "value", "n", "95% interval", "threshold", "rule")
"""The columns of the bars' table (Markdown and HTML)."""


def bar_cells(bar: Bar) -> tuple[str, str, str, str, str, str, str]:
    """A bar's row of the bars' table, in the order of :data:`BAR_COLUMNS`."""
    value = f"{bar.k} lost" if bar.name == "wins" else _pct(bar.value)
    threshold = f"<= {bar.threshold:g} lost" if bar.name == "wins" else f"{bar.threshold:.1%}"
    interval = f"{bar.low:.1%}-{bar.high:.1%}"
    return bar.name, bar.decision, value, str(bar.n), interval, threshold, bar.rule


def sequential_line(report: GateReport) -> str | None:
    """How an ``--until-decided`` gate looked: the per-look confidence and the questions drawn."""
    stored = (report.gate.verdict or {}).get("sequential")
    if not stored:
        return None
    drawn = max(0, len(report.outcomes) - sum(report.regset.counts.values()))
    return (
        f"until decided: at most {stored['max_looks']} looks of up to {stored['step']} more questions per open "
        f"bar, each interval at {report.policy.confidence:.2%} (the error budget spread over the looks); "
        f"{drawn} questions drawn from the set's pool"
    )


def item_question(report: GateReport, key: str) -> str:
    """The question of the gate's item ``key``, cut to 100 characters."""
    text = str(report.payloads.get(key, {}).get("outcome", {}).get("question", ""))
    return text if len(text) <= 100 else text[:99] + "…"


def _failure_tag_lines(ft: FailureTags) -> list[str]:
    lines = [f"failure tags reviewers gave these questions: {failure_tags_head(ft)}"]
    return lines + [
        f"  {tag:<28} {items:>4} item(s), {reviews} review(s)" for tag, items, reviews in failure_tag_rows(ft)
    ]


def gate_judge_notes(report: GateReport) -> list[str]:
    """The caveats of the local judges the gate used (empty when models judged it)."""
    config = report.gate.config
    return local_judge_notes(str(config["judge"]["name"]), str(config.get("fit_judge", {}).get("name", "")))


def render_gate_text(
    report: GateReport, failure_tags: FailureTags | None = None, metrics: ReferenceMetrics | None = None
) -> str:
    """The terminal report: headline, one line per bar, reasons, the cases to look at and (when given) the
    failure tags reviewers gave the set's questions and the eval metrics against their answers."""
    v = report.verdict
    config = report.gate.config
    lines = [
        HEADLINES[v.decision],
        f"gate {report.gate.id} on regression set v{report.regset.version} ({report.regset.id}), "
        f"{v.n_items} items, {v.n_errors} errored",
        f"champion {config['champion']['name']} vs challenger {config['challenger']['name']}; judge "
        f"{config['judge']['name']} ({config['judge']['prompt_version']}), both orders; "
        f"cost {cost_text(report.cost_usd, report.unpriced_calls)}",
        *gate_judge_notes(report),
        "",
        *(_bar_line(b) for b in v.bars),
    ]
    if (line := sequential_line(report)) is not None:
        lines += ["", line]
    if v.reasons:
        lines += ["", *(f"- {r}" for r in v.reasons)]
    for bar in v.bars:
        if bar.listed:
            lines += ["", f"{LISTED_TITLES[bar.name]} ({len(bar.listed)}):"]
            lines += [f"  {key}  {item_question(report, key)}" for key in bar.listed[:20]]
            if len(bar.listed) > 20:
                lines.append(f"  ... and {len(bar.listed) - 20} more (--format json lists all)")
    if failure_tags is not None:
        lines += ["", *_failure_tag_lines(failure_tags)]
    if metrics is not None:
        lines += ["", *metrics_text(metrics)]
    return "\n".join(lines) + "\n"


def render_gate_markdown(
    report: GateReport, failure_tags: FailureTags | None = None, metrics: ReferenceMetrics | None = None
) -> str:
    """Markdown, usable as the pull-request comment (it starts with :data:`COMMENT_MARKER`); with
    ``failure_tags``, those reviewers gave the set's questions; with ``metrics``, the eval metrics against
    their answers."""
    v = report.verdict
    config = report.gate.config
    out = [
        COMMENT_MARKER,
        f"## ragreplay gate: {HEADLINES[v.decision]}",
        "",
        f"Regression set v{report.regset.version} (`{report.regset.id}`), {v.n_items} items "
        f"({v.n_errors} errored); champion {md_text(config['champion']['name'])} vs challenger "
        f"{md_text(config['challenger']['name'])}, judge {md_text(config['judge']['name'])} in both "
        f"orders. Gate `{report.gate.id}`, "
        f"cost {cost_text(report.cost_usd, report.unpriced_calls)}.",
        *(f"\n> {md_text(note)}" for note in gate_judge_notes(report)),
        "",
        f"| {' | '.join(BAR_COLUMNS)} |",
        "|---" * len(BAR_COLUMNS) + "|",
    ]
    for bar in v.bars:
        name, decision, value, n, interval, threshold, rule = bar_cells(bar)
        out.append(f"| {name} | **{decision}** | {value} | {n} | {interval} | {threshold} | {rule} |")
    if (line := sequential_line(report)) is not None:
        out += ["", md_text(line)]
    if v.reasons:
        out += ["", *(f"- {md_text(r)}" for r in v.reasons)]
    for bar in v.bars:
        if bar.listed:
            out += ["", f"<details><summary>{LISTED_TITLES[bar.name]} ({len(bar.listed)})</summary>", ""]
            out += [f"- `{key}` {md_text(item_question(report, key))}" for key in bar.listed[:50]]
            out += ["", "</details>"]
    if failure_tags is not None:
        out += [
            "",
            "### Failure tags reviewers gave these questions",
            "",
            *failure_tags_markdown(failure_tags),
        ]
    if metrics is not None:
        out += ["", *metrics_markdown(metrics)]
    return "\n".join(out) + "\n"


def gate_json(
    report: GateReport, failure_tags: FailureTags | None = None, metrics: ReferenceMetrics | None = None
) -> dict[str, Any]:
    """Everything a script needs: the decision, exit code, bars, policy, every item's outcome and (``null``
    when not looked up or not asked for) the failure tags reviewers gave the set's questions and the eval
    metrics against their answers."""
    return {
        "gate": report.gate.model_dump(mode="json", exclude={"verdict"}),
        "set": {"id": report.regset.id, "version": report.regset.version},
        "decision": report.verdict.decision,
        "exit_code": report.verdict.exit_code,
        "verdict": report.verdict.model_dump(mode="json"),
        "policy": report.policy.model_dump(mode="json"),
        "local_judge": report.local_judge,
        "judge_notes": gate_judge_notes(report),
        "cost_usd": report.cost_usd,
        "unpriced_calls": report.unpriced_calls,
        "failure_tags": None if failure_tags is None else failure_tags.model_dump(mode="json"),
        "reference_metrics": None if metrics is None else metrics.as_json(),
        "items": [
            {
                **o.model_dump(mode="json"),
                **{k: v for k, v in report.payloads[o.key].items() if k != "outcome"},
            }
            for o in report.outcomes
        ],
    }


def render_gate_junit(report: GateReport) -> str:
    """JUnit XML: one test suite, a test case per bar; a failing bar lists its cases, an inconclusive one is
    skipped with the reason, a gate that could not run is an error."""
    v = report.verdict
    suite = ET.Element(
        "testsuite",
        name=f"ragreplay gate {report.gate.id}",
        tests=str(len(v.bars)),
        failures=str(sum(b.decision == "fail" for b in v.bars)),
        skipped=str(sum(b.decision == "inconclusive" for b in v.bars)),
        errors="1" if v.decision == "error" else "0",
    )
    for bar in v.bars:
        case = ET.SubElement(suite, "testcase", classname="ragreplay.gate", name=bar.name)
        message = _bar_line(bar)
        if v.decision == "error":
            ET.SubElement(case, "error", message="; ".join(v.reasons))
        elif bar.decision == "fail":
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = "\n".join(f"{k}  {item_question(report, k)}" for k in bar.listed)
        elif bar.decision == "inconclusive":
            ET.SubElement(case, "skipped", message=message)
        else:
            ET.SubElement(case, "system-out").text = message
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def render_gate(
    report: GateReport,
    fmt: str,
    failure_tags: FailureTags | None = None,
    metrics: ReferenceMetrics | None = None,
) -> str:
    """The report in ``fmt`` (one of :data:`GATE_FORMATS`); ``failure_tags`` and the eval ``metrics`` go in
    every format but JUnit."""
    if fmt == "text":
        return render_gate_text(report, failure_tags, metrics)
    if fmt == "md":
        return render_gate_markdown(report, failure_tags, metrics)
    if fmt == "json":
        return json.dumps(gate_json(report, failure_tags, metrics), indent=2, ensure_ascii=False) + "\n"
    if fmt == "junit":
        return render_gate_junit(report)
    raise ValueError(f"unknown gate format {fmt!r}")
