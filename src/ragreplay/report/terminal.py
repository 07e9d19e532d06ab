"""Terminal report with rich tables."""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragreplay.core.run_summary import CaseRow, RunSummary
from ragreplay.core.types import Verdict
from ragreplay.report.failure_tags import failure_tags_renderable
from ragreplay.report.labels import (
    RATE_LABELS,
    VERDICT_MEANING,
    header_lines,
    judge_caveat,
    rate_of,
    rate_text,
    truncate,
)


def _cases_table(title: str, rows: list[CaseRow], limit: int, total: int | None = None) -> Table:
    table = Table(title=title, show_lines=True, expand=True)
    for col in ("case", "question replayed", "old answer", "new answer", "chunks old → new"):
        table.add_column(col, overflow="fold")
    for r in rows[:limit]:
        question = r.question or r.query
        if r.rewritten:
            question = f"{question}\n(from: {r.query})"
        table.add_row(
            r.case_id,
            truncate(question, 140),
            truncate(r.old_answer, 140),
            truncate(r.new_answer, 140),
            f"{', '.join(r.old_chunk_ids) or '–'} → {', '.join(r.new_chunk_ids) or '–'}",
        )
    total = len(rows) if total is None else total
    if total > limit:
        table.caption = f"…and {total - limit} more (use --format json for all)"
    return table


def build_renderable(s: RunSummary, examples: int = 5) -> Group:
    """The report as rich renderables, for printing to a live console."""
    parts: list[RenderableType] = []
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for label, value in header_lines(s):
        head.add_row(label, value)
    parts.append(head)
    if judge_caveat(s):
        parts.append(Text(judge_caveat(s), style="yellow"))

    verdicts = Table(title="Verdicts")
    verdicts.add_column("verdict")
    verdicts.add_column("count", justify="right")
    verdicts.add_column("meaning")
    for v in Verdict:
        verdicts.add_row(str(v), str(s.rates.counts[v]), VERDICT_MEANING[v])
    parts.append(verdicts)

    rates = Table(title="Rates with 95% Wilson intervals")
    rates.add_column("rate")
    rates.add_column(escape("value [interval] (k/n)"))
    rates.add_column("reads as")
    for key, label, hint in RATE_LABELS:
        rates.add_row(label, rate_text(rate_of(s.rates, key)), hint)
    parts.append(rates)

    if s.by_tag:
        tags = Table(title="By tag")
        for col in ("tag", "value", "GOOD kept", "BAD changed", "unscorable", "errors"):
            tags.add_column(col)
        for t in s.by_tag:
            tags.add_row(
                t.tag,
                t.value,
                rate_text(t.rates.good_maintenance),
                rate_text(t.rates.bad_change),
                str(t.unscorable),
                str(t.errors),
            )
        parts.append(tags)
    if s.failure_tags is not None:
        parts.append(failure_tags_renderable(s.failure_tags))
    if s.skipped:
        skipped = Table(title="Skipped at ingest")
        skipped.add_column("reason")
        skipped.add_column("messages", justify="right")
        for reason, n in sorted(s.skipped.items()):
            skipped.add_row(str(reason), str(n))
        parts.append(skipped)
    for w in s.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    if s.review:
        n = _count(s, s.review)
        parts.append(_cases_table(f"For review: BAD_NO_FIT ({n})", s.review, examples, n))
    regressions = s.rows(Verdict.GOOD_NO_FIT)
    if regressions:
        n = _count(s, regressions)
        parts.append(_cases_table(f"Possible regressions: GOOD_NO_FIT ({n})", regressions, examples, n))
    for r in s.errors[:examples]:
        parts.append(Text(f"error {r.case_id}: {truncate(r.error, 200)}", style="red"))
    for r in s.unscorable[:examples]:
        parts.append(Text(f"unscorable {r.case_id}: {truncate(r.judge_reason, 200)}", style="magenta"))
    return Group(*parts)


def _count(s: RunSummary, rows: list[CaseRow]) -> int:
    """How many cases of the kind of ``rows`` the run has (a summary may list only the first few)."""
    return len(rows) if s.all_cases or rows[0].verdict is None else s.rates.counts[rows[0].verdict]


def render_text(s: RunSummary, examples: int = 5, width: int = 120) -> str:
    """The report as plain text (rich tables without colour)."""
    buffer = io.StringIO()
    Console(width=width, file=buffer, color_system=None).print(build_renderable(s, examples))
    return buffer.getvalue()
