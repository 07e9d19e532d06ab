"""JSON report: the whole summary, for scripts and CI."""

from __future__ import annotations

import json

from ragreplay.core.run_summary import RunSummary
from ragreplay.report.labels import judge_caveat


def render_json(summary: RunSummary) -> str:
    """The summary as indented JSON, including the review list under ``review`` and, under ``judge_note``,
    what the judge can and cannot tell when it is not a language model (``null`` otherwise)."""
    data = summary.model_dump(mode="json")
    data["review"] = [row.model_dump(mode="json") for row in summary.review]
    data["judge_note"] = judge_caveat(summary) or None
    return json.dumps(data, indent=2, ensure_ascii=False)
