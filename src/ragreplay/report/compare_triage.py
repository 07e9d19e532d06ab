"""The triage of a run's BAD_NO_FIT cases as text (rich), Markdown or JSON: three groups, new wins first."""

from __future__ import annotations

import json

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragreplay.compare.triage import LABELS, TriageReport
from ragreplay.errors import ConfigError
from ragreplay.report.labels import md_text, truncate

FORMATS = ("text", "md", "json")


def _header(report: TriageReport) -> str:
    order = "both orders" if report.order == "both" else "single random order"
    counts = ", ".join(f"{label}: {report.counts[label]}" for label in LABELS)
    return (
        f"Triage of run {report.run_id}: {report.n} BAD_NO_FIT case(s) judged old vs new by {report.judge} "
        f"({order}). {counts}"
    )


def build_triage_renderable(report: TriageReport, width: int = 90) -> Group:
    """A header line and one table per group."""
    parts: list[RenderableType] = [Text(_header(report), style="bold")]
    for label in LABELS:
        rows = report.groups[label]
        table = Table(title=f"{label} ({len(rows)})", show_lines=True)
        for col in ("case", "question", "old answer", "new answer", "judge"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(
                r.case_id,
                escape(truncate(r.question, width)),
                escape(truncate(r.old_answer, width)),
                escape(truncate(r.new_answer, width)),
                escape(truncate(r.reason, width)),
            )
        parts.append(table)
    return Group(*parts)


def render_triage_markdown(report: TriageReport) -> str:
    """The triage as Markdown."""
    lines = ["# BAD_NO_FIT triage", "", _header(report)]
    for label in LABELS:
        rows = report.groups[label]
        lines += ["", f"## {label} ({len(rows)})", ""]
        if not rows:
            lines.append("(none)")
            continue
        lines += ["| case | question | old answer | new answer |", "|---|---|---|---|"]
        for r in rows:
            cells = [r.case_id, truncate(r.question), truncate(r.old_answer), truncate(r.new_answer)]
            lines.append("| " + " | ".join(md_text(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_triage(report: TriageReport, fmt: str) -> str:
    """The triage in ``fmt`` (text, md or json)."""
    if fmt == "json":
        return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False)
    if fmt == "md":
        return render_triage_markdown(report)
    if fmt == "text":
        console = Console(width=160, record=True, color_system=None)
        with console.capture() as capture:
            console.print(build_triage_renderable(report))
        return capture.get()
    raise ConfigError(f"--format {fmt!r} is not known. Fix: use one of {', '.join(FORMATS)}")
