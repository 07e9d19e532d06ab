"""A gate as one self-contained HTML page (``ragreplay gate --format html``, ``gate-report ID --format html``), on
the reports' shared page skeleton: the decision and the rule, the bars with their intervals and thresholds, what
each bar lists, the outcomes per stratum, the wound scores, latency and cost per side, the reviewers' failure
tags, the lexical metrics when asked for, the local judges' cards and warnings, and the items in collapsed
groups by stratum and outcome. No script, nothing loaded from elsewhere, every text escaped."""

from __future__ import annotations

from ragreplay.core.costs import cost_text
from ragreplay.core.failure_tags import FailureTags
from ragreplay.gate.reference_metrics import ReferenceMetrics
from ragreplay.gate.run import GateReport
from ragreplay.report.compare_labels import ms
from ragreplay.report.eval_diff import diff_cells
from ragreplay.report.gate import (
    BAR_COLUMNS,
    GATE_FORMATS,
    HEADLINES,
    LISTED_TITLES,
    bar_cells,
    gate_judge_notes,
    item_question,
    render_gate,
    sequential_line,
)
from ragreplay.report.gate_charts import confidence_text, gate_charts, outcome_groups
from ragreplay.report.gate_metrics import GATE_HEAD, metrics_title
from ragreplay.report.html import html_environment
from ragreplay.report.labels import failure_tag_rows, failure_tags_head

GATE_REPORT_FORMATS = (*GATE_FORMATS, "html")
"""Every format of ``ragreplay gate`` and ``ragreplay gate-report``."""

ROWS_SHOWN = 2000
"""At most this many items are listed one by one (the figures and charts cover every item)."""

LISTED_SHOWN = 200
"""At most this many keys are listed under each bar (``--format json`` lists all)."""


def facts(report: GateReport) -> list[tuple[str, str]]:
    """The page's fact table: what was gated against what, by which judges, under which rule, at what cost."""
    v, config = report.verdict, report.gate.config
    judge = config["judge"]
    return [
        ("decision", f"{HEADLINES[v.decision]} (exit {v.exit_code})"),
        ("rule", f"{report.policy.rule} rule, {confidence_text(report)} Clopper-Pearson intervals"),
        ("gate", report.gate.id),
        ("regression set", f"v{report.regset.version} ({report.regset.id})"),
        ("items", f"{v.n_items} items, {v.n_errors} errored"),
        ("champion", str(config["champion"]["name"])),
        ("challenger", str(config["challenger"]["name"])),
        ("judge", f"{judge['name']} ({judge['prompt_version']}), blind, both orders"),
        ("FIT judge", str(config.get("fit_judge", {}).get("name", "-"))),
        ("cost", cost_text(report.cost_usd, report.unpriced_calls)),
    ]


def render_gate_html(
    report: GateReport,
    failure_tags: FailureTags | None = None,
    metrics: ReferenceMetrics | None = None,
    rows_shown: int = ROWS_SHOWN,
) -> str:
    """The gate as one HTML page; ``failure_tags`` and the eval ``metrics`` add their sections when given;
    ``rows_shown`` caps the item list."""
    env = html_environment()
    env.filters["ms"] = ms
    shown = report.outcomes[:rows_shown]
    fixed_score = report.policy.fixed_score
    wounds = [o for o in report.outcomes if o.stratum == "wound" and o.error is None]
    return env.get_template("gate.html.j2").render(
        r=report,
        v=report.verdict,
        headline=HEADLINES[report.verdict.decision],
        facts=facts(report),
        confidence=confidence_text(report),
        notes=gate_judge_notes(report),
        sequential=sequential_line(report),
        bar_columns=BAR_COLUMNS,
        bars=[(b, bar_cells(b)) for b in report.verdict.bars],
        listed=[
            (b.name, LISTED_TITLES[b.name], [(k, item_question(report, k)) for k in b.listed[:LISTED_SHOWN]])
            for b in report.verdict.bars
            if b.listed
        ],
        fixed=[o for o in wounds if o.fixed(fixed_score)],
        n_wounds=len(wounds),
        charts=gate_charts(report, failure_tags),
        failure_tags=None
        if failure_tags is None
        else (failure_tags_head(failure_tags), failure_tag_rows(failure_tags)),
        metrics=None
        if metrics is None
        else (metrics_title(metrics), GATE_HEAD, [diff_cells(d) for d in metrics.diff.metrics]),
        shown=shown,
        groups=outcome_groups(report, shown),
        payloads=report.payloads,
    )


def render_gate_report(
    report: GateReport,
    fmt: str,
    failure_tags: FailureTags | None = None,
    metrics: ReferenceMetrics | None = None,
) -> str:
    """The report in ``fmt``, one of :data:`GATE_REPORT_FORMATS` (html here, the others by
    :func:`ragreplay.report.gate.render_gate`)."""
    if fmt == "html":
        return render_gate_html(report, failure_tags, metrics)
    return render_gate(report, fmt, failure_tags, metrics)
