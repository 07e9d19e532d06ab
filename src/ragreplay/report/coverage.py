"""A coverage check's report as text, markdown or JSON: counts per status with the thresholds, then the
missing-document candidates and the partly covered questions with their closest chunks (id, fact score, cosine,
snippet) and the facts no chunk holds; the LLM check's verdicts and agreement when it ran.

Every text from the dataset or the corpus is made inert: control characters dropped in text, Markdown and
HTML neutralised in md (:func:`~ragreplay.report.labels.md_text`); JSON is JSON.
"""

from __future__ import annotations

import re

from ragreplay.core.costs import cost_text
from ragreplay.diagnosis.coverage import QuestionCoverage, Status
from ragreplay.diagnosis.coverage_run import CoverageReport
from ragreplay.report.labels import md_text, truncate

DIAGNOSIS_FORMATS = ("text", "md", "json")
_LISTS: tuple[tuple[Status, str], ...] = (
    ("missing", "missing-document candidates"),
    ("partly", "partly covered"),
)
LISTED = 50
"""How many questions of each list (missing, partly) a text or md report shows; JSON holds all."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: str | None, width: int = 160) -> str:
    """Text for a terminal: on one line, control and direction characters dropped, cut to ``width``."""
    return truncate(_CONTROL.sub("", text or ""), width)


def md(text: str | None, width: int = 160) -> str:
    """Text for a Markdown table cell or list item (see :func:`plain` and ``md_text``)."""
    return md_text(plain(text, width))


def _ratio(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else f"{k}/0"


def _head(report: CoverageReport) -> list[tuple[str, str]]:
    s = report.summary
    checked = s.questions - s.counts["skipped"]
    rows = [
        ("corpus", f"{s.corpus} ({s.documents} documents, {s.chunks} chunks, embedder {s.embedder})"),
        ("dataset", s.dataset),
        ("questions", f"{s.questions} ({checked} checked, {s.counts['skipped']} skipped)"),
        *[(status, _ratio(s.counts[status], checked)) for status in ("covered", "partly", "missing")],
        ("thresholds", ", ".join(f"{k} {v:g}" for k, v in s.thresholds.items())),
    ]
    if s.judge is not None:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(s.judge_verdicts.items())) or "none"
        rows.append(("LLM check", f"{s.judge} ({s.judge_prompt}): {verdicts}"))
        if s.judge_agreement is not None:
            rows.append(("agrees with lexical", _ratio(s.judge_agreement.k, s.judge_agreement.n)))
        rows.append(("LLM check cost", cost_text(s.judge_cost_usd, s.judge_unpriced_calls)))
    for reason, n in sorted(s.skipped_reasons.items()):
        rows.append(("skipped", f"{n} x {reason}"))
    return rows


def _text_question(q: QuestionCoverage) -> list[str]:
    lines = [
        f"- {plain(q.id, 60)}: {plain(q.question)}",
        f"    held {q.held:.2f}, best cosine {q.cosine:.2f}",
    ]
    if q.judge is not None:
        lines.append(f"    LLM check: {q.judge.verdict or q.judge.error or 'unreadable: ' + q.judge.problem}")
    lines += [f"    not held: {plain(f.fact, 140)} (best {f.share:.2f})" for f in q.facts if not f.held]
    lines += [
        f"    closest {plain(c.id, 60)}  facts {c.fact_score:.2f}  cosine {c.cosine:.2f}  {plain(c.snippet, 100)}"
        for c in q.closest
    ]
    return lines


def render_coverage_text(report: CoverageReport) -> str:
    """The plain-text report."""
    head = _head(report)
    width = max(len(k) for k, _ in head)
    lines = ["coverage check", *[f"  {k.ljust(width)}  {plain(v, 200)}" for k, v in head]]
    for status, title in _LISTS:
        chosen = report.with_status(status)
        lines += ["", f"{title} ({len(chosen)})"]
        for q in chosen[:LISTED]:
            lines += _text_question(q)
        if len(chosen) > LISTED:
            lines.append(f"  ... and {len(chosen) - LISTED} more (--format json lists all)")
    return "\n".join(lines) + "\n"


def _md_question(q: QuestionCoverage) -> list[str]:
    lines = [f"### {md(q.id, 60)}: {md(q.question)}", "", f"held {q.held:.2f}, best cosine {q.cosine:.2f}"]
    if q.judge is not None:
        lines[-1] += (
            f"; LLM check: {md(q.judge.verdict or q.judge.error or 'unreadable: ' + q.judge.problem)}"
        )
    lines += ["", *[f"- not held: {md(f.fact, 200)} (best {f.share:.2f})" for f in q.facts if not f.held]]
    lines += ["", "| closest chunk | fact score | cosine | snippet |", "|---|---:|---:|---|"]
    lines += [
        f"| `{md(c.id, 80)}` | {c.fact_score:.2f} | {c.cosine:.2f} | {md(c.snippet)} |" for c in q.closest
    ]
    return [*lines, ""]


def render_coverage_md(report: CoverageReport) -> str:
    """The Markdown report."""
    lines = ["# Coverage check", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {md(v, 300)} |" for k, v in _head(report)]
    for status, title in _LISTS:
        chosen = report.with_status(status)
        lines += ["", f"## {title.capitalize()} ({len(chosen)})", ""]
        for q in chosen[:LISTED]:
            lines += _md_question(q)
        if len(chosen) > LISTED:
            lines.append(f"... and {len(chosen) - LISTED} more (`--format json` lists all)")
    return "\n".join(lines) + "\n"


def render_coverage(report: CoverageReport, fmt: str) -> str:
    """The report in ``fmt``: ``text``, ``md`` or ``json`` (every question, every fact, every closest chunk)."""
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "md":
        return render_coverage_md(report)
    return render_coverage_text(report)
