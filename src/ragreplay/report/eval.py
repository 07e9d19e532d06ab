"""An eval run's report as text, markdown or JSON: per metric the rows it was determined for, the undetermined
count, mean, p50, p90 and a distribution over ten bins; then the same per tag, and the undetermined reasons."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ragreplay.core.costs import cost_text
from ragreplay.core.eval import MetricSummary
from ragreplay.core.rubric import METRIC_PREFIX, OVERALL, raw_score
from ragreplay.evaluation.run import EvalReport
from ragreplay.report.eval_tracing import tracing_tables
from ragreplay.report.labels import md_text

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


def _text_table(rows: list[list[str]], head: Sequence[str] = _HEAD) -> list[str]:
    table = [list(head), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
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


_RUBRIC_HEAD = ("criterion", "weight", "n", "undetermined", "mean (1-5)", "p50 (1-5)", "min", "max")
_VARIANCE_HEAD = (
    "metric",
    "rows",
    "mean row sd",
    "sd of run means",
    "run means (min-max)",
    "run mean per repeat",
)


def _raw(value: float | None) -> str:
    return "-" if value is None else f"{raw_score(value):.2f}"


def _rubric_rows(report: EvalReport) -> list[list[str]]:
    rubric = report.record.config.get("rubric")
    if not isinstance(rubric, dict):
        return []
    weights = {str(c.get("name")): f"{c.get('weight', 1.0):g}" for c in rubric.get("criteria", [])}
    weights[OVERALL] = "-"
    by_name = {m.name: m for m in report.summary.metrics}
    rows = []
    for name, weight in weights.items():
        m = by_name.get(METRIC_PREFIX + name)
        if m is not None:
            rows.append(
                [name, weight, str(m.n), str(m.undetermined), *map(_raw, (m.mean, m.p50, m.min, m.max))]
            )
    return rows


def _variance_rows(report: EvalReport) -> list[list[str]]:
    return [
        [
            v.name,
            str(v.rows),
            _num(v.mean_row_sd),
            _num(v.sd_of_means),
            f"{_num(v.low)}-{_num(v.high)}",
            " ".join(_num(m) for m in v.repeat_means),
        ]
        for v in report.summary.variance
    ]


def extra_tables(report: EvalReport) -> list[tuple[str, Sequence[str], list[list[str]]]]:
    """The rubric's criteria on their 1-5 scale, and the variance between repeats, when the run has them."""
    tables: list[tuple[str, Sequence[str], list[list[str]]]] = []
    rubric = _rubric_rows(report)
    if rubric:
        tables.append(("rubric, on the judge's 1-5 scale", _RUBRIC_HEAD, rubric))
    variance = _variance_rows(report)
    if variance:
        repeats = report.summary.variance[0].repeats
        tables.append((f"run-to-run variance over {repeats} repeats (0..1 scale)", _VARIANCE_HEAD, variance))
    # then the tracing: latency per stage, tokens and cost (none in runs saved before it was kept)
    target = report.record.config.get("target")
    return tables + tracing_tables(report.summary.tracing, target if isinstance(target, dict) else None)


def _md_plain(head: Sequence[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    return lines + ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]


def undetermined_reasons(report: EvalReport) -> list[tuple[str, str, int]]:
    """``(metric, reason, rows)`` for every reason a metric was undetermined, over all rows."""
    return [(m.name, reason, n) for m in report.summary.metrics for reason, n in m.reasons.items()]


def eval_cost(report: EvalReport) -> tuple[float, int]:
    """The run's dollars (judge calls, and target answers whose price is known) and its unpriced calls (judge
    calls of a model with no price, and target answers of unknown price, one call each): see ``core/costs``."""
    cost = sum(row.cost_usd for row in report.rows)
    unpriced = sum(row.unpriced_calls for row in report.rows)
    for trace in (row.trace for row in report.rows if row.trace is not None):
        if trace.target_cost_usd is None:
            unpriced += 1
        else:
            cost += trace.target_cost_usd
    return cost, unpriced


def eval_header(report: EvalReport) -> list[str]:
    """The report's first lines: the run, the judge and its options, the rows, calls and cost."""
    r, s = report.record, report.summary
    judge = f"{r.judge} ({r.prompt_version})" if r.judge else "none (no LLM metrics)"
    cached = sum(row.calls_from_cache for row in report.rows)
    calls = sum(row.calls for row in report.rows) - cached
    cost, unpriced = eval_cost(report)
    shown = ["shown again from the store: no call made now"] if report.reshown else []
    options = []
    rubric = r.config.get("rubric")
    if isinstance(rubric, dict):
        options.append(
            f"rubric: {rubric.get('name')} ({rubric.get('prompt_version')}), "
            f"{len(rubric.get('criteria', []))} criteria graded 1-5, shown as (score - 1) / 4"
        )
    repeats = r.config.get("repeats")
    if repeats:
        options.append(
            f"repeats: every row judged {repeats} times; judged metrics are the mean of the repeats"
        )
    return [
        f"eval run {r.id} ({r.status.value}) on {r.dataset}",
        *shown,
        f"judge: {judge}",
        *options,
        f"rows: {s.rows} ({s.errors} errored)  judge calls made: {calls}, answered from the cache: {cached}  "
        f"cost: {cost_text(cost, unpriced)}",
    ]


def render_text(report: EvalReport) -> str:
    """The plain-text report."""
    lines = [*eval_header(report), "", *_text_table(_rows(report.summary.metrics))]
    for tag, metrics in report.summary.per_tag.items():
        lines += ["", f"tag {tag} (rows: {report.summary.tag_rows[tag]})", *_text_table(_rows(metrics))]
    for title, columns, table in extra_tables(report):
        lines += ["", f"{title}:", *_text_table(table, columns)]
    reasons = undetermined_reasons(report)
    if reasons:
        lines += ["", "undetermined:"] + [f"  {name}: {n} x {reason}" for name, reason, n in reasons]
    errored = [row for row in report.rows if row.error]
    if errored:
        lines += ["", "errored rows (run the same command again to retry them):"]
        lines += [f"  {row.row_id}: {row.error}" for row in errored[:10]]
    return "\n".join(lines) + "\n"


def render_markdown(report: EvalReport) -> str:
    """The markdown report."""
    head = eval_header(report)
    lines = [f"# {head[0]}", "", *[f"- {h}" for h in head[1:]], "", *_md_table(_rows(report.summary.metrics))]
    for tag, metrics in report.summary.per_tag.items():
        lines += [
            "",
            f"## tag {md_text(tag)} (rows: {report.summary.tag_rows[tag]})",
            "",
            *_md_table(_rows(metrics)),
        ]
    reasons = undetermined_reasons(report)
    if reasons:
        lines += ["", "## undetermined", "", "| metric | reason | rows |", "|---|---|---:|"]
        lines += [f"| {name} | {md_text(reason)} | {n} |" for name, reason, n in reasons]
    for title, columns, table in extra_tables(report):
        lines += ["", f"## {title}", "", *_md_plain(columns, table)]
    return "\n".join(lines) + "\n"


def render_json(report: EvalReport) -> str:
    """The JSON report: the run, the summary and every row's scores."""
    data = {
        "run": report.record.model_dump(mode="json", exclude={"summary"}),
        "summary": report.summary.model_dump(mode="json"),
        "cost": dict(zip(("cost_usd", "unpriced_calls"), eval_cost(report), strict=True)),
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
