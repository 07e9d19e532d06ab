"""Which tracing tool exported a record: told apart by the keys each one writes."""

from __future__ import annotations

import json
from typing import Any

_LANGFUSE_KEYS = frozenset({"traceId", "dataType", "sessionId", "observations", "projectId", "htmlPath"})
_PHOENIX_KEYS = frozenset({"context.span_id", "span_kind", "context.trace_id"})


def trace_format(obj: Any) -> str | None:
    """``langfuse``, ``langsmith``, ``openinference`` or ``otel`` for a record of that tool's export, else ``None``.

    OTLP JSON (``resourceSpans``) is ``openinference`` when its spans carry ``openinference.span.kind``,
    ``otel`` otherwise, as are OTLP JSON logs (``resourceLogs``); a Langfuse API page
    (``{"data": [...], "meta": ...}``) is judged by its first item.
    """
    if not isinstance(obj, dict):
        return None
    if "resourceSpans" in obj:
        text = json.dumps(obj)
        return "openinference" if "openinference.span.kind" in text else "otel"
    if "resourceLogs" in obj:
        return "otel"
    if isinstance(obj.get("data"), list) and "meta" in obj:
        return trace_format(obj["data"][0]) if obj["data"] else None
    if "run_type" in obj or ("key" in obj and "run_id" in obj) or "dotted_order" in obj:
        return "langsmith"
    if _LANGFUSE_KEYS & obj.keys():
        return "langfuse"
    context = obj.get("context")
    if _PHOENIX_KEYS & obj.keys() or (isinstance(context, dict) and "span_id" in context):
        return "openinference"
    if "span_id" in obj and ({"label", "score", "result"} & obj.keys()):
        return "openinference"
    return None
