"""A comparison as JSON, for scripts; the same figures as the text and Markdown reports."""

from __future__ import annotations

import json

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.errors import ConfigError

FORMATS = ("text", "md", "json")


def render_comparison_json(summary: ComparisonSummary) -> str:
    """The whole summary, per-case rows included, as indented JSON."""
    return json.dumps(summary.model_dump(mode="json"), indent=2, ensure_ascii=False)


def render_comparison(summary: ComparisonSummary, fmt: str) -> str:
    """The report in ``fmt`` (text, md or json)."""
    if fmt == "json":
        return render_comparison_json(summary)
    if fmt == "md":
        from ragreplay.report.compare_markdown import render_comparison_markdown

        return render_comparison_markdown(summary)
    if fmt == "text":
        from ragreplay.report.compare_text import render_comparison_text

        return render_comparison_text(summary)
    raise ConfigError(f"--format {fmt!r} is not known. Fix: use one of {', '.join(FORMATS)}")
