"""Spans (OpenTelemetry's shape, as OpenInference and the GenAI conventions use it) joined into turns.

Each format reads a span into :class:`SpanFacts` (what it says about the request); :class:`SpanTraces` joins
the spans of a trace: the root span's input and output are the question and answer, the model calls fill
what the root leaves out (the first call's last user message, the last call's answer), retriever spans give
the chunks in start order, and any span may carry the session (conversation) and user ids. Also the OTLP JSON
decoding: ``resourceSpans`` / ``scopeSpans`` / ``spans`` with ``{key, value: AnyValue}`` attribute lists, ids in
hex or (protobuf's JSON mapping) base64.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ragreplay.core.types import RetrievedChunk, Role, TokenUsage
from ragreplay.ingest.problems import Record
from ragreplay.ingest.trace_turns import Turn, add_tags, required_id, span_ms


@dataclass
class Call:
    """What one model call (an LLM span) says."""

    question: str = ""
    history: list[tuple[Role, str]] = field(default_factory=list)
    answer: str = ""
    tokens: TokenUsage | None = None


@dataclass
class SpanFacts:
    """What one span says about its trace's request."""

    trace_id: str
    span_id: str
    line: int
    root: bool
    start: datetime | None = None
    end: datetime | None = None
    session: str | None = None
    user_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    io: Call | None = None  # the root span's input and output
    call: Call | None = None
    chunks: list[RetrievedChunk] | None = None


def _order(facts: SpanFacts) -> tuple[float, int]:
    return (facts.start.timestamp() if facts.start else math.inf, facts.line)


class SpanTraces:
    """The spans of a file, by trace; :meth:`turns` joins them."""

    def __init__(self) -> None:
        self.traces: dict[str, list[SpanFacts]] = {}
        self.trace_of_span: dict[str, str] = {}

    def add(self, facts: SpanFacts) -> None:
        """Keep one span's facts."""
        self.traces.setdefault(facts.trace_id, []).append(facts)
        self.trace_of_span[facts.span_id] = facts.trace_id

    def trace_of(self, span_or_trace_id: str) -> str | None:
        """The trace a span id belongs to (a trace id is its own); ``None`` if neither is in the file."""
        if span_or_trace_id in self.trace_of_span:
            return self.trace_of_span[span_or_trace_id]
        return span_or_trace_id if span_or_trace_id in self.traces else None

    def turns(self) -> dict[str, Turn]:
        """One turn per trace."""
        return {trace_id: _turn(trace_id, spans) for trace_id, spans in self.traces.items()}


def _turn(trace_id: str, spans: list[SpanFacts]) -> Turn:
    spans.sort(key=_order)
    turn = Turn(trace_id=trace_id, line=min(s.line for s in spans))
    roots = [s for s in spans if s.root] or spans[:1]
    root = roots[0]
    turn.start, turn.latency_ms = root.start, span_ms(root.start, root.end)
    if root.io is not None:
        turn.question, turn.history, turn.answer = root.io.question, root.io.history, root.io.answer
    calls = [s.call for s in spans if s.call is not None]
    if calls and not turn.question:
        turn.question, turn.history = calls[0].question, calls[0].history
    if calls and not turn.answer:
        turn.answer = next((c.answer for c in reversed(calls) if c.answer), "")
    used = [c.tokens for c in calls if c.tokens is not None]
    turn.tokens = sum(used[1:], used[0]) if used else None
    turn.retrieved = [chunk for s in spans for chunk in s.chunks or []]
    turn.session = next((s.session for s in roots + spans if s.session), None)
    turn.user_id = next((s.user_id for s in roots + spans if s.user_id), None)
    for span in roots + spans:
        add_tags(turn.tags, span.tags)
    return turn


def nanos_ts(value: Any, rec: Record, field_name: str) -> datetime | None:
    """An OTLP ``*TimeUnixNano`` (a decimal string or an integer) as a UTC time; empty means none."""
    if value in (None, "", 0, "0"):
        return None
    try:
        nanos = int(value)
        return datetime.fromtimestamp(nanos / 1e9, tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        rec.problem(field_name, f"{value!r} is not a time in Unix nanoseconds", 'use "1767225600000000000"')
        return None


def hex_id(value: Any) -> str | None:
    """A trace or span id as hex: hex as OTLP JSON writes it stays, base64 (protobuf's JSON mapping: 24
    characters for a trace id, 12 for a span id) becomes hex; anything else is returned as text."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if len(text) in (12, 24) and not all(c in "0123456789abcdefABCDEF" for c in text):
        try:
            raw = binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            return text
        return raw.hex() if len(raw) in (8, 16) else text
    return text


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``, ``intValue``, ``arrayValue``, ``kvlistValue``...) as Python."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values"))
    return None


def attributes(items: Any) -> dict[str, Any]:
    """An OTLP attribute list (``[{"key": ..., "value": AnyValue}]``) as a dict."""
    if isinstance(items, dict):
        return items
    if not isinstance(items, list):
        return {}
    return {
        str(item["key"]): any_value(item.get("value"))
        for item in items
        if isinstance(item, dict) and "key" in item
    }


@dataclass
class OtlpSpan:
    """One span of an OTLP JSON document, decoded."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: datetime | None
    end: datetime | None
    attrs: dict[str, Any]
    events: list[tuple[str, datetime | None, dict[str, Any], str]]  # name, time, attributes, field path
    where: str  # the span's field path, for problems


def otlp_spans(rec: Record, document: dict[str, Any]) -> Iterator[OtlpSpan]:
    """The spans of one OTLP JSON export request; problems (a span without ids, a bad time) go on ``rec``."""
    for r, resource_spans in enumerate(_dicts(document.get("resourceSpans"))):
        resource = attributes((resource_spans.get("resource") or {}).get("attributes"))
        for s, scope_spans in enumerate(_dicts(resource_spans.get("scopeSpans"))):
            for i, span in enumerate(_dicts(scope_spans.get("spans"))):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                decoded = _otlp_span(rec, span, where, resource)
                if decoded is not None:
                    yield decoded


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _otlp_span(rec: Record, span: dict[str, Any], where: str, resource: dict[str, Any]) -> OtlpSpan | None:
    fix = "export spans with the OTLP JSON encoding (traceId and spanId as hex strings)"
    trace_id = hex_id(required_id(span.get("traceId"), rec, f"{where}.traceId", fix))
    span_id = hex_id(required_id(span.get("spanId"), rec, f"{where}.spanId", fix))
    start = nanos_ts(span.get("startTimeUnixNano"), rec, f"{where}.startTimeUnixNano")
    end = nanos_ts(span.get("endTimeUnixNano"), rec, f"{where}.endTimeUnixNano")
    events = []
    for e, event in enumerate(_dicts(span.get("events"))):
        at = nanos_ts(event.get("timeUnixNano"), rec, f"{where}.events[{e}].timeUnixNano")
        events.append(
            (str(event.get("name") or ""), at, attributes(event.get("attributes")), f"{where}.events[{e}]")
        )
    if trace_id is None or span_id is None:
        return None
    attrs = {
        **{k: v for k, v in resource.items() if k in ("user.id", "session.id")},
        **attributes(span.get("attributes")),
    }
    parent = hex_id(span.get("parentSpanId"))
    return OtlpSpan(trace_id, span_id, parent, str(span.get("name") or ""), start, end, attrs, events, where)
