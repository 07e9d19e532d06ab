"""`ragreplay eval-diff` as text, markdown or JSON: per metric the paired rows, mean A, mean B, B - A with its
95% paired bootstrap interval, the permutation p-value (and Holm's, over the metrics compared), Cohen's d_z and
the rank-biserial correlation; then the rows left unpaired."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ragreplay.core.eval_diff import MetricDiff
from ragreplay.evaluation.diff import EvalDiff
from ragreplay.report.labels import md_text
from ragreplay.store.evals import EvalRunRecord

DIFF_FORMATS = ("text", "md", "json")
HEAD = ("metric", "n", "undetermined", "mean A", "mean B", "B - A", "95% CI", "p", "p (Holm)", "d_z", "r_rb")


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def diff_cells(m: MetricDiff) -> list[str]:
    """One metric's row of the diff table, in the order of :data:`HEAD`."""
    interval = "-" if m.low is None or m.high is None else f"[{m.low:+.3f}, {m.high:+.3f}]"
    return [
        m.name,
        str(m.n),
        str(m.undetermined),
        _num(m.mean_a),
        _num(m.mean_b),
        _num(m.diff, signed=True),
        interval,
        _p(m.p_value),
        _p(m.p_holm),
        _num(m.cohen_dz, signed=True),
        _num(m.rank_biserial, signed=True),
    ]


def _judge_of(run: EvalRunRecord) -> tuple[str, str, object]:
    rubric = run.config.get("rubric")
    return run.judge, run.prompt_version, rubric.get("prompt_version") if isinstance(rubric, dict) else None


def _header(d: EvalDiff) -> list[str]:
    r = d.rows
    lines = [
        f"eval-diff: B {d.run_b.id} minus A {d.run_a.id}",
        f"A: {d.run_a.dataset}, judge {d.run_a.judge or '-'}; B: {d.run_b.dataset}, judge {d.run_b.judge or '-'}",
        f"rows paired by id: {r.paired}; only in A: {r.only_a}; only in B: {r.only_b}; "
        f"errored in either run: {r.errored}",
    ]
    if _judge_of(d.run_a) != _judge_of(d.run_b):
        lines.append(
            "the runs' judges, prompts or rubrics differ: a difference may be the judge's, not the answers'"
        )
    return lines


def _footer(d: EvalDiff) -> list[str]:
    lines = [
        "p: two-sided sign-flip permutation test of the mean difference (exact up to 16 pairs, else 20,000 "
        "resamples); p (Holm): adjusted over the metrics above; d_z: mean difference / sd of differences; "
        "r_rb: matched-pairs rank-biserial."
    ]
    if d.rows.only_in_a:
        lines.append(f"metrics only in A: {', '.join(d.rows.only_in_a)}")
    if d.rows.only_in_b:
        lines.append(f"metrics only in B: {', '.join(d.rows.only_in_b)}")
    return lines


def render_text(d: EvalDiff) -> str:
    """The plain-text diff."""
    body = text_table(HEAD, [diff_cells(m) for m in d.rows.metrics])
    return "\n".join([*_header(d), "", *body, "", *_footer(d)]) + "\n"


def text_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A plain-text table: the first column left-aligned, the others right-aligned, a rule under the head."""
    table = [list(head), *(list(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    body = []
    for n, row in enumerate(table):
        body.append(
            "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row))
        )
        if n == 0:
            body.append("  ".join("-" * w for w in widths))
    return body


def md_row(cells: Sequence[str]) -> str:
    """A Markdown table row, every cell made inert."""
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def render_markdown(d: EvalDiff) -> str:
    """The markdown diff."""
    head = _header(d)
    lines = [f"# {md_text(head[0])}", "", *(f"- {md_text(h)}" for h in head[1:]), ""]
    lines += [md_row(HEAD), "|---|" + "---:|" * (len(HEAD) - 1)]
    lines += [md_row(diff_cells(m)) for m in d.rows.metrics]
    return "\n".join([*lines, "", *(md_text(f) for f in _footer(d))]) + "\n"


def render_json(d: EvalDiff) -> str:
    """The JSON diff: both runs, the pairing counts and every metric's figures."""
    data = {
        "run_a": d.run_a.model_dump(mode="json", exclude={"summary"}),
        "run_b": d.run_b.model_dump(mode="json", exclude={"summary"}),
        **d.rows.model_dump(mode="json"),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_diff(d: EvalDiff, fmt: str) -> str:
    """The diff in ``fmt`` (one of :data:`DIFF_FORMATS`)."""
    if fmt == "md":
        return render_markdown(d)
    if fmt == "json":
        return render_json(d)
    return render_text(d)
