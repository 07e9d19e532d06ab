"""Reader for OpenTelemetry GenAI semantic-convention spans in OTLP JSON (the collector's file exporter).

Each line (or the whole file) is an export request: ``resourceSpans`` / ``scopeSpans`` / ``spans``. A span
with chat messages is a model call: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON, ``parts``),
else the older events (``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.choice``,
``gen_ai.content.prompt`` / ``gen_ai.content.completion``) or indexed ``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*`` attributes. A ``retrieval`` operation span (``gen_ai.retrieval.documents``) gives the
chunks; ``gen_ai.conversation.id`` groups traces into conversations; ``gen_ai.evaluation.result`` events are
the feedback. See docs/importers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, TokenUsage
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.span_traces import Call, OtlpSpan, SpanFacts, SpanTraces, otlp_spans, span_conversations
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import answer_of, chunks_of, history_of, indexed, maybe_json, question_of
from ragreplay.ingest.trace_turns import optional_text

EVALUATION_EVENT = "gen_ai.evaluation.result"
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_RETRIEVAL_OPERATIONS = frozenset({"retrieval", "retrieve", "search"})


def read_otel(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from OTLP JSON spans: a conversation per ``gen_ai.conversation.id``.

    Read as :func:`~ragreplay.ingest.span_traces.span_conversations` reads a span file.
    """
    return span_conversations(
        path, problems, progress, partial(_read_record, mapping or FieldMapping()), "evaluation event"
    )


def _read_record(
    mapping: FieldMapping, rec: Record, obj: dict[str, Any], spans: SpanTraces, votes: Votes
) -> None:
    if "resourceSpans" not in obj:
        rec.problem(
            None,
            "not an OTLP JSON export (no resourceSpans)",
            "write spans with the OpenTelemetry collector's file exporter (OTLP JSON), or pick another --format",
        )
        return
    for span in otlp_spans(rec, obj):
        spans.add(_facts(span, rec.line or 0))
        _evaluations(rec, span, mapping, votes)


def _event_messages(span: OtlpSpan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, _, attrs, _ in span.events:
        body = maybe_json(attrs.get("gen_ai.event.content"))
        body = body if isinstance(body, dict) else {}
        content = attrs.get("content", body.get("content"))
        if name in _ROLE_EVENTS:
            inputs.append(
                {"role": _ROLE_EVENTS[name], "content": content if isinstance(content, str) else ""}
            )
        elif name == "gen_ai.choice":
            message = maybe_json(attrs.get("message", body.get("message")))
            text = message.get("content") if isinstance(message, dict) else content
            outputs.append({"role": "assistant", "content": text if isinstance(text, str) else ""})
        elif name == "gen_ai.content.prompt":
            inputs.extend(m for m in _listed(attrs.get("gen_ai.prompt")))
        elif name == "gen_ai.content.completion":
            outputs.extend(m for m in _listed(attrs.get("gen_ai.completion")))
    return inputs, outputs


def _listed(value: Any) -> list[dict[str, Any]]:
    value = maybe_json(value)
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _call(span: OtlpSpan) -> Call | None:
    attrs = span.attrs
    inputs: Any = attrs.get("gen_ai.input.messages") or indexed(attrs, "gen_ai.prompt") or None
    outputs: Any = attrs.get("gen_ai.output.messages") or indexed(attrs, "gen_ai.completion") or None
    if inputs is None or outputs is None:
        event_in, event_out = _event_messages(span)
        inputs, outputs = inputs or event_in or None, outputs or event_out or None
    if inputs is None and outputs is None:
        return None
    counts = [attrs.get(f"gen_ai.usage.{k}") for k in ("input_tokens", "output_tokens")]
    if not all(isinstance(c, int) for c in counts):
        counts = [attrs.get(f"gen_ai.usage.{k}") for k in ("prompt_tokens", "completion_tokens")]
    tokens = None
    if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        tokens = TokenUsage(input=max(int(counts[0] or 0), 0), output=max(int(counts[1] or 0), 0))
    return Call(question_of(inputs), history_of(inputs), answer_of(outputs), tokens)


def _facts(span: OtlpSpan, line: int) -> SpanFacts:
    attrs = span.attrs
    facts = SpanFacts(
        span.trace_id, span.span_id, line, root=span.parent_id is None, start=span.start, end=span.end
    )
    facts.session = optional_text(attrs.get("gen_ai.conversation.id") or attrs.get("session.id"))
    facts.user_id = optional_text(attrs.get("user.id") or attrs.get("enduser.id"))
    facts.call = _call(span)
    operation = str(attrs.get("gen_ai.operation.name") or "").lower()
    documents = attrs.get("gen_ai.retrieval.documents") or indexed(attrs, "retrieval.documents")
    if operation in _RETRIEVAL_OPERATIONS or documents:
        facts.chunks = chunks_of(documents)
    return facts


def _evaluations(rec: Record, span: OtlpSpan, mapping: FieldMapping, votes: Votes) -> None:
    for name, at, attrs, where in span.events:
        if name != EVALUATION_EVENT or not is_feedback_name(attrs.get("gen_ai.evaluation.name"), mapping):
            continue
        label = attrs.get("gen_ai.evaluation.score.label")
        key = "label" if isinstance(label, str) and label.strip() else "value"
        field_name = f"{where}.attributes[gen_ai.evaluation.score.{key}]"
        before = rec.count
        value = attrs.get("gen_ai.evaluation.score.value")
        feedback = score_feedback(rec, field_name, mapping, kind=None, value=value, label=label)
        if rec.count == before:
            votes.add(span.span_id, feedback, at, rec, field_name)
