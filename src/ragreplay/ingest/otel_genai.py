"""Reader for OpenTelemetry GenAI semantic-convention spans and log records in OTLP JSON.

Each line (or the whole file) is an export request, as the OpenTelemetry Collector's file exporter writes it
and as OTLP/HTTP JSON requests carry it: ``resourceSpans`` / ``scopeSpans`` / ``spans``, or ``resourceLogs``
/ ``scopeLogs`` / ``logRecords`` (one file may hold both; ids in hex, or base64 as protobuf's JSON mapping
writes them). A span with chat messages is a model call: ``gen_ai.input.messages`` / ``gen_ai.output.messages``
(JSON text or structured values, ``parts``), else the ``gen_ai.client.inference.operation.details`` log record
holding them, else the message events (``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.choice``..., as span events or as log records joined to their span by ``traceId`` / ``spanId``), else
OpenLLMetry's indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes. A ``retrieval`` span
(``gen_ai.retrieval.documents``) gives the chunks; ``gen_ai.conversation.id`` (or ``session.id``) groups
traces into conversations; ``gen_ai.evaluation.result`` events or log records named by a feedback name are
the feedback. See docs/importers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, TokenUsage
from ragreplay.ingest.json_records import trace_records
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.provenance import note_ignored, note_record
from ragreplay.ingest.span_traces import (
    Call,
    OtlpSpan,
    SpanFacts,
    SpanTraces,
    any_value,
    attributes,
    hex_id,
    nanos_ts,
    otlp_spans,
)
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import answer_of, chunks_of, history_of, indexed, maybe_json, question_of
from ragreplay.ingest.trace_turns import Turn, optional_text, voted_conversations

EVALUATION_EVENT = "gen_ai.evaluation.result"
#: The log record (or span event) of the latest conventions that carries a call's messages as attributes.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_MESSAGE_EVENTS = frozenset(
    {*_ROLE_EVENTS, "gen_ai.choice", "gen_ai.content.prompt", "gen_ai.content.completion", DETAILS_EVENT}
)
_RETRIEVAL_OPERATIONS = frozenset({"retrieval", "retrieve", "search"})
_NOT_OTLP_FIX = (
    "write spans and logs with the OpenTelemetry collector's file exporter (OTLP JSON), or pick a --format"
)


@dataclass
class Event:
    """One GenAI event, from a span's ``events`` or from a log record joined to its span."""

    name: str
    at: datetime | None
    attrs: dict[str, Any]
    body: Any
    where: str  # the record's field path, for problems and provenance
    line: int


@dataclass
class _Span:
    span: OtlpSpan
    line: int
    events: list[Event] = field(default_factory=list)


class OtelTraces(SpanTraces):
    """The spans and GenAI log records of a file; spans become facts once the whole file is read (a log
    record may come before or after its span)."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, _Span] = {}
        self.orphans: dict[str, list[Event]] = {}  # log records of spans not (yet) read, by span id
        self.origins: dict[str, dict[str, str]] = {}  # by span id: value -> source field

    def add_span(self, span: OtlpSpan, line: int) -> None:
        """Keep a span, and the events its own record carries."""
        kept = _Span(span, line)
        for name, at, attrs, where in span.events:
            kept.events.append(Event(name, at, attrs, None, f"line {line} {where}", line))
        kept.events.extend(self.orphans.pop(span.span_id, []))
        self.pending[span.span_id] = kept
        self.trace_of_span[span.span_id] = span.trace_id

    def add_event(self, trace_id: str | None, span_id: str | None, event: Event) -> None:
        """Keep a log record's event for its span (a record with no span is left out)."""
        if span_id is None:
            note_ignored(f"log record {event.name}: no spanId")
            return
        if trace_id is not None:
            self.trace_of_span.setdefault(span_id, trace_id)
        if span_id in self.pending:
            self.pending[span_id].events.append(event)
        else:
            self.orphans.setdefault(span_id, []).append(event)

    def turns(self) -> dict[str, Turn]:
        """One turn per trace (see :class:`~ragreplay.ingest.span_traces.SpanTraces`), with each value's source."""
        for span_id, events in self.orphans.items():
            for event in events:
                note_ignored(f"log record {event.name}: its span {span_id!r} is not in the file")
        for kept in self.pending.values():
            self.add(self._facts(kept))
        turns = super().turns()
        for trace_id, turn in turns.items():
            self._origins(turn, self.traces.get(trace_id, []))
        return turns

    def _facts(self, kept: _Span) -> SpanFacts:
        span, attrs = kept.span, dict(kept.span.attrs)
        details = [e for e in kept.events if e.name == DETAILS_EVENT]
        for event in details:
            for key, value in event.attrs.items():
                attrs.setdefault(key, value)
        facts = SpanFacts(
            span.trace_id,
            span.span_id,
            kept.line,
            root=span.parent_id is None,
            start=span.start,
            end=span.end,
        )
        facts.session = optional_text(attrs.get("gen_ai.conversation.id") or attrs.get("session.id"))
        facts.user_id = optional_text(attrs.get("user.id") or attrs.get("enduser.id"))
        origin = self.origins.setdefault(span.span_id, {})
        where = f"span {span.name!r} (line {kept.line})"
        facts.call = _call(attrs, kept.events, where, details, origin)
        operation = str(attrs.get("gen_ai.operation.name") or "").lower()
        documents = attrs.get("gen_ai.retrieval.documents") or indexed(attrs, "retrieval.documents")
        if operation in _RETRIEVAL_OPERATIONS or documents:
            facts.chunks = chunks_of(documents)
            origin["retrieved"] = f"{where} gen_ai.retrieval.documents"
        note_record(f"span {operation}" if operation else "span")
        return facts

    def _origins(self, turn: Turn, spans: list[SpanFacts]) -> None:
        calls = [s for s in spans if s.call is not None]
        if calls:
            turn.origin["question"] = self.origins[calls[0].span_id].get("question", "")
            last = next((s for s in reversed(calls) if s.call and s.call.answer), calls[-1])
            turn.origin["answer"] = self.origins[last.span_id].get("answer", "")
            if any(s.call and s.call.tokens for s in calls):
                turn.origin["tokens"] = "gen_ai.usage.* of the model-call spans"
        retrieved = [
            self.origins[s.span_id]["retrieved"] for s in spans if "retrieved" in self.origins[s.span_id]
        ]
        if retrieved:
            turn.origin["retrieved"] = "; ".join(retrieved)
        root = next((s for s in spans if s.root), None)
        if root is not None and turn.latency_ms is not None:
            turn.origin["latency_ms"] = f"root span (line {root.line}) startTimeUnixNano..endTimeUnixNano"
        if turn.session:
            turn.origin["session"] = "gen_ai.conversation.id / session.id span attribute"
        if turn.user_id:
            turn.origin["user_id"] = "user.id / enduser.id span attribute"


def read_otel(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from OTLP JSON spans and logs: a conversation per
    ``gen_ai.conversation.id``; problems are handled as in :func:`~ragreplay.ingest.canonical.read_canonical`.
    The whole file is read before the first is yielded."""
    mapping = mapping or FieldMapping()
    log = problems if problems is not None else ProblemLog(str(path))
    traces, votes = OtelTraces(), Votes()
    for rec, obj in trace_records(path, log, progress):
        _read_record(mapping, rec, obj, traces, votes)
    yield from voted_conversations(
        log, problems is None, traces.turns, (votes, traces.trace_of, "evaluation event")
    )


def _read_record(
    mapping: FieldMapping, rec: Record, obj: dict[str, Any], traces: OtelTraces, votes: Votes
) -> None:
    if "resourceSpans" not in obj and "resourceLogs" not in obj:
        rec.problem(None, "not an OTLP JSON export (no resourceSpans or resourceLogs)", _NOT_OTLP_FIX)
        return
    line = rec.line or 0
    for span in otlp_spans(rec, obj):
        traces.add_span(span, line)
        for name, at, attrs, where in span.events:
            if name == EVALUATION_EVENT:
                _evaluation(rec, Event(name, at, attrs, None, where, line), span.span_id, mapping, votes)
    for trace_id, span_id, event in _log_events(rec, obj):
        if event.name == EVALUATION_EVENT:
            target = span_id or trace_id
            if span_id is not None and trace_id is not None:
                traces.trace_of_span.setdefault(span_id, trace_id)
            if target is None:
                rec.problem(
                    f"{event.where}.traceId",
                    "an evaluation log record without the traceId and spanId it judges",
                    "emit the evaluation in the context of the judged span (its trace and span ids)",
                )
            else:
                _evaluation(rec, event, target, mapping, votes)
        elif event.name in _MESSAGE_EVENTS:
            note_record(f"log record {event.name}")
            traces.add_event(trace_id, span_id, event)
        else:
            note_ignored(f"log record {event.name or '(no event name)'}: not a GenAI event")


def _log_events(rec: Record, document: dict[str, Any]) -> Iterator[tuple[str | None, str | None, Event]]:
    """The log records of one OTLP JSON logs export: ``(trace id, span id, event)``; bad times go on ``rec``."""
    for r, resource_logs in enumerate(_dicts(document.get("resourceLogs"))):
        for s, scope_logs in enumerate(_dicts(resource_logs.get("scopeLogs"))):
            for i, record in enumerate(_dicts(scope_logs.get("logRecords"))):
                where = f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{i}]"
                attrs = attributes(record.get("attributes"))
                name = record.get("eventName") or attrs.get("event.name") or ""
                time_key = "timeUnixNano" if record.get("timeUnixNano") not in (None, "", "0") else None
                time_key = time_key or "observedTimeUnixNano"
                at = nanos_ts(record.get(time_key), rec, f"{where}.{time_key}")
                event = Event(str(name), at, attrs, any_value(record.get("body")), where, rec.line or 0)
                yield _id(record.get("traceId")), _id(record.get("spanId")), event


def _id(value: Any) -> str | None:
    text = hex_id(value)
    return text if text and text.strip("0") else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _content(event: Event) -> tuple[Any, dict[str, Any]]:
    body = event.body if isinstance(event.body, dict) else maybe_json(event.attrs.get("gen_ai.event.content"))
    body = body if isinstance(body, dict) else {}
    return event.attrs.get("content", body.get("content")), body


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return answer_of([{"role": "assistant", "parts": value}]) if isinstance(value, list) else ""


def _event_messages(events: list[Event]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Event]]:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    used: list[Event] = []
    for event in events:
        content, body = _content(event)
        if event.name in _ROLE_EVENTS:
            role = body.get("role") if isinstance(body.get("role"), str) else _ROLE_EVENTS[event.name]
            inputs.append({"role": role, "content": _text(content)})
        elif event.name == "gen_ai.choice":
            message = maybe_json(event.attrs.get("message", body.get("message")))
            text = message.get("content") if isinstance(message, dict) else content
            outputs.append({"role": "assistant", "content": _text(text)})
        elif event.name == "gen_ai.content.prompt":
            inputs.extend(_listed(event.attrs.get("gen_ai.prompt")))
        elif event.name == "gen_ai.content.completion":
            outputs.extend(_listed(event.attrs.get("gen_ai.completion")))
        else:
            continue
        used.append(event)
    return inputs, outputs, used


def _listed(value: Any) -> list[dict[str, Any]]:
    value = maybe_json(value)
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _call(
    attrs: dict[str, Any], events: list[Event], where: str, details: list[Event], origin: dict[str, str]
) -> Call | None:
    """A model call from its span's attributes (with a details log record's), else its message events."""
    attr_from = f"log record {DETAILS_EVENT} (line {details[0].line})" if details else where
    inputs: Any = attrs.get("gen_ai.input.messages")
    outputs: Any = attrs.get("gen_ai.output.messages")
    origin["question"] = f"{attr_from} gen_ai.input.messages" if inputs else ""
    origin["answer"] = f"{attr_from} gen_ai.output.messages" if outputs else ""
    if inputs is None and indexed(attrs, "gen_ai.prompt"):
        inputs, origin["question"] = indexed(attrs, "gen_ai.prompt"), f"{where} gen_ai.prompt.N.content"
    if outputs is None and indexed(attrs, "gen_ai.completion"):
        outputs, origin["answer"] = (
            indexed(attrs, "gen_ai.completion"),
            f"{where} gen_ai.completion.N.content",
        )
    if inputs is None or outputs is None:
        event_in, event_out, used = _event_messages(events)
        if inputs is None and event_in:
            inputs, origin["question"] = event_in, _named(e for e in used if e.name != "gen_ai.choice")
        if outputs is None and event_out:
            outputs, origin["answer"] = event_out, _named(e for e in used if e.name == "gen_ai.choice")
    if inputs is None and outputs is None:
        return None
    return Call(question_of(inputs), history_of(inputs), answer_of(outputs), _tokens(attrs))


def _named(events: Iterator[Event]) -> str:
    kept = list(events)
    kinds = ", ".join(dict.fromkeys(e.name for e in kept))
    return f"events {kinds} (line {kept[0].line} {kept[0].where})" if kept else ""


def _tokens(attrs: dict[str, Any]) -> TokenUsage | None:
    for names in (("input_tokens", "output_tokens"), ("prompt_tokens", "completion_tokens")):
        counts = [attrs.get(f"gen_ai.usage.{n}") for n in names]
        if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            return TokenUsage(input=max(int(counts[0] or 0), 0), output=max(int(counts[1] or 0), 0))
    return None


def _evaluation(rec: Record, event: Event, target: str, mapping: FieldMapping, votes: Votes) -> None:
    name = event.attrs.get("gen_ai.evaluation.name")
    if not is_feedback_name(name, mapping):
        note_ignored(f"evaluation {name!r}: not a feedback name")
        return
    label = event.attrs.get("gen_ai.evaluation.score.label")
    key = "label" if isinstance(label, str) and label.strip() else "value"
    field_name = f"{event.where}.attributes[gen_ai.evaluation.score.{key}]"
    before = rec.count
    value = event.attrs.get("gen_ai.evaluation.score.value")
    feedback = score_feedback(rec, field_name, mapping, kind=None, value=value, label=label)
    if rec.count == before:
        note_record("evaluation (feedback)")
        votes.add(target, feedback, event.at, rec, field_name)
