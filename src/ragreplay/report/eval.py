"""An eval run's report as text, markdown or JSON: per metric the rows it was determined for, the undetermined
count, mean, p50, p90 and a distribution over ten bins; then the same per tag, and the undetermined reasons."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ragreplay.core.eval import MetricSummary
from ragreplay.evaluation.run import EvalReport

EVAL_FORMATS = ("text", "md", "json")
_BARS = "·▁▂▃▄▅▆▇█"


def spark(histogram: Sequence[int]) -> str:
    """A distribution as one bar per bin (``·``: no row, a full block: the fullest bin)."""
    if not histogram or max(histogram) == 0:
        return ""
    top = max(histogram)
    return "".join(_BARS[0 if c == 0 else max(1, round(8 * c / top))] for c in histogram)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rows(metrics: Sequence[MetricSummary]) -> list[list[str]]:
    return [
        [m.name, str(m.n), str(m.undetermined), _num(m.mean), _num(m.p50), _num(m.p90), spark(m.histogram)]
        for m in metrics
    ]


_HEAD = ["metric", "n", "undetermined", "mean", "p50", "p90", "distribution (0..1, 10 bins)"]


def _text_table(rows: list[list[str]]) -> list[str]:
    table = [_HEAD, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(_HEAD))]
    lines = []
    for n, row in enumerate(table):
        lines.append(
            "  ".join(
                cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _md_table(rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_HEAD) + " |", "|---|" + "---:|" * 5 + "---|"]
    lines += [
        "| " + " | ".join(f"`{c}`" if i == 6 and c else c for i, c in enumerate(r)) + " |" for r in rows
    ]
    return lines


def _reasons(report: EvalReport) -> list[tuple[str, str, int]]:
    return [(m.name, reason, n) for m in report.summary.metrics for reason, n in m.reasons.items()]


def _header(report: EvalReport) -> list[str]:
    r, s = report.record, report.summary
    judge = f"{r.judge} ({r.prompt_version})" if r.judge else "none (no LLM metrics)"
    calls = sum(row.calls for row in report.rows if not row.cached)
    cached = sum(1 for row in report.rows if row.cached)
    cost = sum(row.cost_usd for row in report.rows)
    shown = ["shown again from the store: no call made now"] if report.reshown else []
    return [
        f"eval run {r.id} ({r.status.value}) on {r.dataset}",
        *shown,
        f"judge: {judge}",
        f"rows: {s.rows} ({s.errors} errored)  judge calls made: {calls}, answered from the cache: {cached}  "
        f"cost: ${cost:.4f}",
    ]


def render_text(report: EvalReport) -> str:
    """The plain-text report."""
    lines = [*_header(report), "", *_text_table(_rows(report.summary.metrics))]
    for tag, metrics in report.summary.per_tag.items():
        lines += ["", f"tag {tag} (rows: {report.summary.tag_rows[tag]})", *_text_table(_rows(metrics))]
    reasons = _reasons(report)
    if reasons:
        lines += ["", "undetermined:"] + [f"  {name}: {n} x {reason}" for name, reason, n in reasons]
    errored = [row for row in report.rows if row.error]
    if errored:
        lines += ["", "errored rows (run the same command again to retry them):"]
        lines += [f"  {row.row_id}: {row.error}" for row in errored[:10]]
    return "\n".join(lines) + "\n"


def render_markdown(report: EvalReport) -> str:
    """The markdown report."""
    head = _header(report)
    lines = [f"# {head[0]}", "", *[f"- {h}" for h in head[1:]], "", *_md_table(_rows(report.summary.metrics))]
    for tag, metrics in report.summary.per_tag.items():
        lines += [
            "",
            f"## tag `{tag}` (rows: {report.summary.tag_rows[tag]})",
            "",
            *_md_table(_rows(metrics)),
        ]
    reasons = _reasons(report)
    if reasons:
        lines += ["", "## undetermined", "", "| metric | reason | rows |", "|---|---|---:|"]
        lines += [f"| {name} | {reason} | {n} |" for name, reason, n in reasons]
    return "\n".join(lines) + "\n"


def render_json(report: EvalReport) -> str:
    """The JSON report: the run, the summary and every row's scores."""
    data = {
        "run": report.record.model_dump(mode="json", exclude={"summary"}),
        "summary": report.summary.model_dump(mode="json"),
        "rows": [row.model_dump(mode="json", exclude={"raw_reply"}) for row in report.rows],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_eval(report: EvalReport, fmt: str) -> str:
    """The report in ``fmt`` (one of :data:`EVAL_FORMATS`)."""
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return render_json(report)
    return render_text(report)
