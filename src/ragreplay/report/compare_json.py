"""A comparison as JSON, for scripts; the same figures as the text and Markdown reports."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TextIO

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.compare_stats import CompareRow
from ragreplay.errors import ConfigError
from ragreplay.report.labels import local_judge_notes

FORMATS = ("text", "md", "json", "html")


def render_comparison_json(summary: ComparisonSummary) -> str:
    """The whole summary, per-case rows included, as indented JSON, with ``judge_notes``: the caveats of the
    local judges used (empty for model judges)."""
    data = summary.model_dump(mode="json") | {
        "judge_notes": local_judge_notes(summary.judge, summary.fit_judge)
    }
    return json.dumps(data, indent=2, ensure_ascii=False)


_ROWS_MARK = "\u0000rows\u0000"


def write_json_report(summary: ComparisonSummary, rows: Iterable[CompareRow], out: TextIO) -> None:
    """:func:`render_comparison_json` of ``summary`` with ``rows`` as its per-case rows, written to ``out`` as
    the rows come (a summary from rollups has none of its own): memory holds one row at a time."""
    data = summary.model_dump(mode="json") | {
        "rows": _ROWS_MARK,
        "judge_notes": local_judge_notes(summary.judge, summary.fit_judge),
    }
    head, tail = json.dumps(data, indent=2, ensure_ascii=False).split(json.dumps(_ROWS_MARK), 1)
    out.write(head + "[")
    first = True
    for row in rows:
        item = json.dumps(row.model_dump(mode="json"), indent=2, ensure_ascii=False)
        out.write(("\n" if first else ",\n") + "\n".join("    " + line for line in item.splitlines()))
        first = False
    out.write("]" if first else "\n  ]")
    out.write(tail)


def render_comparison(summary: ComparisonSummary, fmt: str) -> str:
    """The report in ``fmt`` (text, md, json or html)."""
    if fmt == "json":
        return render_comparison_json(summary)
    if fmt == "md":
        from ragreplay.report.compare_markdown import render_comparison_markdown

        return render_comparison_markdown(summary)
    if fmt == "html":
        from ragreplay.report.compare_html import render_comparison_html

        return render_comparison_html(summary)
    if fmt == "text":
        from ragreplay.report.compare_text import render_comparison_text

        return render_comparison_text(summary)
    raise ConfigError(f"--format {fmt!r} is not known. Fix: use one of {', '.join(FORMATS)}")
