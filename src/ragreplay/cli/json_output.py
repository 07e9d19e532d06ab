"""``--format json`` of the listings (``runs``, ``sources``, ``comparisons``) and of the summaries ``ingest`` and
``shadow judge`` print: one JSON document on stdout, its keys stable (documented in the README), times in ISO 8601
UTC; progress and notes stay on stderr, so the output pipes into ``jq`` or a script as it is."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ragreplay.cli.common import check_choice
from ragreplay.core.comparisons import ComparisonRecord
from ragreplay.core.runs import ResultStatus, RunRecord, SourceRecord

OUTPUT_FORMATS = ("text", "json")
FORMAT_HELP = "text | json (one JSON document on stdout, for scripts)"


def check_output_format(fmt: str, flag: str = "--format") -> bool:
    """Whether ``fmt`` asks for JSON; a :class:`ConfigError` naming ``flag`` when it is neither text nor json."""
    check_choice(fmt, OUTPUT_FORMATS, flag)
    return fmt == "json"


def write_json(data: Any) -> None:
    """``data`` as indented JSON on stdout, non-ASCII text kept as it is."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def iso(at: datetime | None) -> str | None:
    """A stored time in ISO 8601 (``None`` stays ``None``)."""
    return None if at is None else at.isoformat()


def run_json(record: RunRecord, counts: Mapping[ResultStatus, int], status: str) -> dict[str, Any]:
    """One run of ``ragreplay runs --format json``; ``status`` as the table shows it (``stale`` included)."""
    return {
        "id": record.id,
        "created_at": iso(record.created_at),
        "finished_at": iso(record.finished_at),
        "status": status,
        "n_cases": record.n_cases,
        "done": sum(n for s, n in counts.items() if s != ResultStatus.PENDING),
        "errors": counts.get(ResultStatus.ERROR, 0),
        "target": record.target_name,
        "target_version": record.target_version,
        "judge": record.judge_name,
        "judge_prompt_version": record.judge_prompt_version,
        "rewriter": record.rewriter_name,
    }


def source_json(record: SourceRecord) -> dict[str, Any]:
    """One source of ``ragreplay sources --format json``."""
    return {
        "id": record.id,
        "path": record.path,
        "format": record.format,
        "ingested_at": iso(record.ingested_at),
        "n_conversations": record.n_conversations,
        "n_cases": record.n_cases,
        "n_skipped": record.n_skipped,
    }


def comparison_json(record: ComparisonRecord, done: int) -> dict[str, Any]:
    """One comparison of ``ragreplay comparisons --format json``."""
    config = record.config
    return {
        "id": record.id,
        "created_at": iso(record.created_at),
        "finished_at": iso(record.finished_at),
        "status": str(record.status),
        "n_cases": record.n_cases,
        "done": done,
        "champion": config["champion"]["name"],
        "challengers": [c["name"] for c in config["challengers"]],
        "judge": config["judge"]["name"],
        "judge_prompt_version": config["judge"]["prompt_version"],
        "order": config["order"],
        "cases": config["cases"],
    }
