"""JSON report: the whole summary, for scripts and CI."""

from __future__ import annotations

import json

from ragreplay.core.run_summary import RunSummary


def render_json(summary: RunSummary) -> str:
    """The summary as indented JSON, including the review list under ``review``."""
    data = summary.model_dump(mode="json")
    data["review"] = [row.model_dump(mode="json") for row in summary.review]
    return json.dumps(data, indent=2, ensure_ascii=False)
