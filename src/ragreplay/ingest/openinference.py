"""Reader for Phoenix / OpenInference spans and their annotations (JSON Lines, a JSON array, or OTLP JSON).

A span is Phoenix's JSON (``context.trace_id``/``span_id``, ``parent_id``, ``span_kind``, ``start_time``,
``attributes`` nested or dotted), a row of ``get_spans_dataframe()`` written as JSON (``context.span_id``,
``attributes.input.value``...), or an OTLP JSON export whose spans carry OpenInference attributes. An
annotation (a human's or an evaluator's) has ``span_id``, ``name`` and ``label``/``score`` (or a ``result``
holding them), as Phoenix's span annotations and evaluations export them. See docs/importers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, TokenUsage
from ragreplay.ingest.fields import parse_ts
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.span_traces import Call, SpanFacts, SpanTraces, otlp_spans, span_conversations
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import (
    answer_of,
    as_dict,
    chunks_of,
    flatten,
    history_of,
    indexed,
    maybe_json,
    question_of,
)
from ragreplay.ingest.trace_turns import add_tags, optional_text, required_id

_SPAN_FIX = "export spans with their context (trace_id and span_id), e.g. px.Client().get_spans_dataframe()"


def read_openinference(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from OpenInference spans: a conversation per ``session.id``.

    Read as :func:`~ragreplay.ingest.span_traces.span_conversations` reads a span file.
    """
    return span_conversations(
        path, problems, progress, partial(_read_record, mapping or FieldMapping()), "annotation"
    )


def _read_record(
    mapping: FieldMapping, rec: Record, obj: dict[str, Any], spans: SpanTraces, votes: Votes
) -> None:
    if "resourceSpans" in obj:
        for otlp in otlp_spans(rec, obj):
            parent = otlp.parent_id
            spans.add(
                span_facts(
                    otlp.trace_id, otlp.span_id, parent, otlp.attrs, rec.line or 0, otlp.start, otlp.end
                )
            )
    elif _is_annotation(obj):
        _annotation(rec, obj, mapping, votes)
    else:
        facts = _phoenix_span(rec, obj)
        if facts is not None:
            spans.add(facts)


def _is_annotation(obj: dict[str, Any]) -> bool:
    has_span = "span_id" in obj or "context.span_id" in obj
    spanish = "attributes" in obj or "context" in obj or "context.trace_id" in obj or "span_kind" in obj
    return has_span and not spanish


def _phoenix_span(rec: Record, obj: dict[str, Any]) -> SpanFacts | None:
    flat = flatten(obj)
    trace_id = required_id(flat.get("context.trace_id"), rec, "context.trace_id", _SPAN_FIX)
    span_id = required_id(flat.get("context.span_id"), rec, "context.span_id", _SPAN_FIX)
    start = parse_ts(flat.get("start_time"), rec, "start_time")
    end = parse_ts(flat.get("end_time"), rec, "end_time")
    if trace_id is None or span_id is None or not rec.ok:
        return None
    attrs = {key[len("attributes.") :]: value for key, value in flat.items() if key.startswith("attributes.")}
    if "openinference.span.kind" not in attrs and flat.get("span_kind") is not None:
        attrs["openinference.span.kind"] = flat["span_kind"]
    parent = optional_text(flat.get("parent_id"))
    return span_facts(trace_id, span_id, parent, attrs, rec.line or 0, start, end)


def _messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    items = indexed(attrs, prefix)
    return items or None


def span_facts(
    trace_id: str,
    span_id: str,
    parent: str | None,
    attrs: dict[str, Any],
    line: int,
    start: Any,
    end: Any,
) -> SpanFacts:
    """What one span's OpenInference attributes say (``attrs`` with dotted keys, lists flattened or not)."""
    attrs = flatten(attrs)
    kind = str(attrs.get("openinference.span.kind") or "").upper()
    facts = SpanFacts(trace_id, span_id, line, root=parent is None, start=start, end=end)
    facts.session = optional_text(attrs.get("session.id"))
    facts.user_id = optional_text(attrs.get("user.id"))
    if facts.root:
        source = attrs.get("input.value")
        facts.io = Call(question_of(source), history_of(source), answer_of(attrs.get("output.value")))
        add_tags(facts.tags, attrs.get("tag.tags"))
        add_tags(facts.tags, maybe_json(attrs.get("metadata")))
    if kind == "LLM":
        source = _messages(attrs, "llm.input_messages") or attrs.get("input.value")
        output = _messages(attrs, "llm.output_messages") or attrs.get("output.value")
        prompt, completion = attrs.get("llm.token_count.prompt"), attrs.get("llm.token_count.completion")
        tokens = None
        if isinstance(prompt, int) and isinstance(completion, int):
            tokens = TokenUsage(input=max(prompt, 0), output=max(completion, 0))
        facts.call = Call(question_of(source), history_of(source), answer_of(output), tokens)
    if kind == "RETRIEVER":
        facts.chunks = chunks_of(indexed(attrs, "retrieval.documents") or attrs.get("output.value"))
    return facts


def _annotation(rec: Record, obj: dict[str, Any], mapping: FieldMapping, votes: Votes) -> None:
    if not is_feedback_name(obj.get("name"), mapping):
        if obj.get("name") in (None, ""):
            rec.problem(
                "name",
                "an annotation without its name",
                'add "name": "user_feedback" (the annotation\'s name)',
            )
        return
    key = "span_id" if "span_id" in obj else "context.span_id"
    span_id = required_id(obj.get(key), rec, key, "every annotation needs the span_id it annotates")
    nested = isinstance(obj.get("result"), dict)
    result = as_dict(obj.get("result")) if nested else obj
    prefix = "result." if nested else ""
    label = result.get("label")
    field_name = prefix + ("label" if isinstance(label, str) and label.strip() else "score")
    feedback = score_feedback(rec, field_name, mapping, kind=None, value=result.get("score"), label=label)
    at = parse_ts(obj.get("updated_at") or obj.get("created_at"), rec, "created_at")
    if span_id is not None and rec.ok:
        votes.add(span_id, feedback, at, rec, field_name)
