"""A single self-contained HTML report (no scripts, no external files), rendered with Jinja2, all text escaped."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape

from ragreplay.core.run_summary import RunSummary
from ragreplay.core.types import Verdict
from ragreplay.report.labels import (
    RATE_LABELS,
    VERDICT_MEANING,
    failure_tag_rows,
    failure_tags_head,
    header_lines,
    judge_caveat,
    pct,
    rate_of,
    rate_text,
)
from ragreplay.report.replay_charts import case_groups, rate_plot, tag_multiples, verdict_heatmap


def html_environment() -> Environment:
    """The Jinja2 environment of the HTML reports: templates of ``report/templates``, every value escaped."""
    env = Environment(
        loader=PackageLoader("ragreplay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = pct
    env.filters["rate_text"] = rate_text
    return env


def render_html(summary: RunSummary, examples: int | None = None) -> str:
    """The report as one HTML page: the verdict matrix as a heatmap, the rates on an interval plot, the
    per-tag rates as small multiples, and the cases grouped by verdict then language or tag in collapsed
    groups. ``examples`` limits the case list (``None``: every case)."""
    judge_note = judge_caveat(summary)
    cases = summary.cases if examples is None else summary.cases[:examples]
    rates = [(label, rate_of(summary.rates, key), hint) for key, label, hint in RATE_LABELS]
    return (
        html_environment()
        .get_template("report.html.j2")
        .render(
            s=summary,
            header=header_lines(summary),
            verdicts=list(Verdict),
            meaning=VERDICT_MEANING,
            rates=rates,
            judge_note=judge_note,
            cases=cases,
            groups=case_groups(cases),
            charts={
                "matrix": verdict_heatmap(summary),
                "rates": rate_plot(summary),
                "tags": tag_multiples(summary),
            },
            failure_tags=None
            if summary.failure_tags is None
            else (failure_tags_head(summary.failure_tags), failure_tag_rows(summary.failure_tags)),
        )
    )
