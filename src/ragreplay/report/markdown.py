"""Markdown report, for pull requests and wikis."""

from __future__ import annotations

from ragreplay.core.run_summary import CaseRow, RunSummary
from ragreplay.core.types import Verdict
from ragreplay.report.failure_tags import failure_tags_markdown
from ragreplay.report.labels import (
    RATE_LABELS,
    VERDICT_MEANING,
    header_lines,
    judge_caveat,
    md_text,
    rate_of,
    rate_text,
    truncate,
)


def _case_table(rows: list[CaseRow], limit: int) -> list[str]:
    out = [
        "| case | feedback | question replayed | old answer | new answer | old chunks | new chunks |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows[:limit]:
        question = r.question or r.query
        if r.rewritten:
            question = f"{question} (from: {r.query})"
        out.append(
            "| "
            + " | ".join(
                md_text(x)
                for x in (
                    r.case_id,
                    str(r.feedback),
                    truncate(question, 120),
                    truncate(r.old_answer, 120),
                    truncate(r.new_answer, 120),
                    ", ".join(r.old_chunk_ids) or "–",
                    ", ".join(r.new_chunk_ids) or "–",
                )
            )
            + " |"
        )
    if len(rows) > limit:
        out.append(f"\n…and {len(rows) - limit} more (use `--format json` for all).")
    return out


def render_markdown(s: RunSummary, examples: int = 10) -> str:
    """The report as Markdown."""
    lines = [f"# ragreplay run {s.run.id}", ""]
    lines += [f"- **{label}**: {md_text(value)}" for label, value in header_lines(s)]
    if judge_caveat(s):
        lines += ["", f"> {judge_caveat(s)}"]
    lines += ["", "## Verdicts", "", "| verdict | count | meaning |", "|---|---:|---|"]
    lines += [f"| {v} | {s.rates.counts[v]} | {VERDICT_MEANING[v]} |" for v in Verdict]
    lines += [
        "",
        "## Rates (95% Wilson intervals)",
        "",
        "| rate | value [interval] (k/n) | reads as |",
        "|---|---|---|",
    ]
    lines += [
        f"| {label} | {rate_text(rate_of(s.rates, key))} | {hint} |" for key, label, hint in RATE_LABELS
    ]
    if s.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in s.warnings]
    if s.by_tag:
        lines += [
            "",
            "## By tag",
            "",
            "| tag | value | GOOD kept | BAD changed | unscorable | errors |",
            "|---|---|---|---|---:|---:|",
        ]
        lines += [
            f"| {md_text(t.tag)} | {md_text(t.value)} | {rate_text(t.rates.good_maintenance)} | "
            f"{rate_text(t.rates.bad_change)} | {t.unscorable} | {t.errors} |"
            for t in s.by_tag
        ]
    if s.failure_tags is not None:
        lines += ["", "## Failure tags from review", "", *failure_tags_markdown(s.failure_tags)]
    if s.skipped:
        lines += ["", "## Skipped at ingest", "", "| reason | messages |", "|---|---:|"]
        lines += [f"| {reason} | {n} |" for reason, n in sorted(s.skipped.items())]
    lines += ["", f"## For review: BAD_NO_FIT ({len(s.review)})", ""]
    lines += _case_table(s.review, examples) if s.review else ["None."]
    regressions = s.rows(Verdict.GOOD_NO_FIT)
    lines += ["", f"## Possible regressions: GOOD_NO_FIT ({len(regressions)})", ""]
    lines += _case_table(regressions, examples) if regressions else ["None."]
    if s.errors or s.unscorable:
        lines += ["", "## Errors and unscorable", ""]
        lines += [f"- `{r.case_id}` error: {md_text(truncate(r.error, 200))}" for r in s.errors[:examples]]
        lines += [
            f"- `{r.case_id}` unscorable: {md_text(truncate(r.judge_reason, 200))}"
            for r in s.unscorable[:examples]
        ]
    return "\n".join(lines) + "\n"
