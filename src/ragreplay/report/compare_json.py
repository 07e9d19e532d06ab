"""A comparison as JSON, for scripts; the same figures as the text and Markdown reports."""

from __future__ import annotations

import json

from ragreplay.compare.grid import ComparisonSummary
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
