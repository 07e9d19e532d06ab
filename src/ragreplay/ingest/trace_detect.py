"""Which tracing tool exported a record: told apart by the keys each one writes."""

from __future__ import annotations

import json
from typing import Any

_LANGFUSE_KEYS = frozenset({"traceId", "dataType", "sessionId", "observations", "projectId", "htmlPath"})
#: Langfuse's blob-storage export (snake_case columns): every table's rows carry ``project_id`` and one of these
_LANGFUSE_ROW_KEYS = frozenset({"trace_id", "session_id", "data_type", "start_time"})
_PHOENIX_KEYS = frozenset({"context.span_id", "span_kind", "context.trace_id"})
#: Phoenix span and trace annotations (the API's, or ``get_span_annotations_dataframe()``'s columns)
_PHOENIX_ANNOTATION_KEYS = frozenset(
    {"label", "score", "result", "result.label", "result.score", "annotator_kind"}
)


def trace_format(obj: Any) -> str | None:
    """``langfuse``, ``langsmith``, ``openinference`` or ``otel`` for a record of that tool's export, else ``None``.

    OTLP JSON (``resourceSpans``) is ``openinference`` when its spans carry ``openinference.span.kind``,
    ``otel`` otherwise, as are OTLP JSON logs (``resourceLogs``); a Langfuse API page (``{"data": [...],
    "meta": ...}``) and a Phoenix REST page (``{"data": [...], "next_cursor": ...}``) are judged by their
    first item; a Langfuse ingestion batch (``{"batch": [{"type": "trace-create", "body": ...}]}``), a UI
    trace download (``{"trace": {...}, ...}``) and a blob-storage export row (``project_id`` with
    ``trace_id``, ``session_id``, ``data_type`` or ``start_time``) are ``langfuse``; a Phoenix span or trace
    annotation (``span_id`` or ``trace_id`` with a label, score, result or annotator kind) is ``openinference``.
    """
    if not isinstance(obj, dict):
        return None
    if "resourceSpans" in obj:
        text = json.dumps(obj)
        return "openinference" if "openinference.span.kind" in text else "otel"
    if "resourceLogs" in obj:
        return "otel"
    if isinstance(obj.get("data"), list) and ("meta" in obj or "next_cursor" in obj):
        return trace_format(obj["data"][0]) if obj["data"] else None
    if "run_type" in obj or ("key" in obj and "run_id" in obj) or "dotted_order" in obj:
        return "langsmith"
    if _LANGFUSE_KEYS & obj.keys() or _is_langfuse_other(obj):
        return "langfuse"
    context = obj.get("context")
    if _PHOENIX_KEYS & obj.keys() or (isinstance(context, dict) and "span_id" in context):
        return "openinference"
    if ("span_id" in obj or "trace_id" in obj) and (_PHOENIX_ANNOTATION_KEYS & obj.keys()):
        return "openinference"
    return None


def _is_langfuse_other(obj: dict[str, Any]) -> bool:
    batch = obj.get("batch")
    if isinstance(batch, list) and batch and isinstance(batch[0], dict):
        return str(batch[0].get("type", "")).endswith(("-create", "-update")) and "body" in batch[0]
    trace = obj.get("trace")
    if isinstance(trace, dict) and "id" in trace and ("input" in trace or "observations" in obj):
        return True
    return "project_id" in obj and bool(_LANGFUSE_ROW_KEYS & obj.keys())
