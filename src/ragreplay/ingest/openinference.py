"""Reader for Phoenix / OpenInference spans and their annotations: JSON, JSON Lines, Parquet, CSV or OTLP JSON,
one file or a folder of them.

A span is Phoenix's span JSON (``context.trace_id``/``span_id``, ``parent_id``, ``span_kind``, ``start_time``,
``attributes`` nested or dotted), as ``Client().spans.get_spans()`` returns it or the REST API's page of spans
(``{"data": [...], "next_cursor": ...}``) sends it; a row of ``get_spans_dataframe()`` saved as Parquet, CSV or
JSON (``context.span_id``, ``attributes.input.value``, ``attributes.llm.input_messages`` as a list...); or a
span of an OTLP JSON export carrying OpenInference attributes. An annotation has ``span_id`` (a span
annotation) or ``trace_id`` (a trace annotation), a ``name`` (``annotation_name`` in
``get_span_annotations_dataframe()``), an ``annotator_kind`` and ``label``/``score`` (or a ``result`` holding
them, nested or as ``result.label`` columns), as Phoenix's annotation API, its REST pages and the evaluations
dataframes give them. A human's annotation with a feedback name is the user's feedback; an LLM's or code's is
an evaluation, read only when the field mapping names it. Traces with no question, answer or model call
(indexing, embedding) are not conversation turns. See docs/importers.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, RetrievedChunk, TokenUsage
from ragreplay.ingest.fields import parse_ts
from ragreplay.ingest.json_records import trace_records
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.provenance import note_ignored, note_record
from ragreplay.ingest.span_traces import Call, SpanFacts, SpanTraces, otlp_spans
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
from ragreplay.ingest.trace_turns import Turn, add_tags, optional_text, required_id, voted_conversations

_SPAN_FIX = "export spans with their context (trace_id and span_id), e.g. px.Client().get_spans_dataframe()"
_SPAN_KEYS = ("attributes", "context", "context.trace_id", "span_kind")
_EVALUATORS = ("LLM", "CODE")


def read_openinference(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from OpenInference spans: a conversation per ``session.id``;
    problems are handled as in :func:`~ragreplay.ingest.canonical.read_canonical`. The whole file (or folder)
    is read before the first is yielded."""
    mapping = mapping or FieldMapping()
    log = problems if problems is not None else ProblemLog(str(path))
    spans, votes = PhoenixTraces(), Votes()
    for rec, obj in trace_records(path, log, progress):
        _read_record(mapping, rec, obj, spans, votes)
    yield from voted_conversations(log, problems is None, spans.turns, (votes, spans.trace_of, "annotation"))


class PhoenixTraces(SpanTraces):
    """The spans of an export, with where each span's values came from (for ``ingest --dry-run``)."""

    def __init__(self) -> None:
        super().__init__()
        self.origins: dict[str, dict[str, str]] = {}  # by span id: value -> source field
        self.names: dict[str, str] = {}  # by span id: the span's name
        self.wheres: dict[str, str] = {}  # by span id: the span's name and file:line

    def add_span(self, facts: SpanFacts, name: str, where: str, origin: dict[str, str]) -> None:
        """Keep one span's facts, its name, where it is (``span 'x' (file:line)``) and its values' sources."""
        self.add(facts)
        self.names[facts.span_id] = name
        self.wheres[facts.span_id] = where
        self.origins[facts.span_id] = origin

    def turns(self) -> dict[str, Turn]:
        """One turn per trace that is a request to the assistant, its chunks once each, with their sources."""
        kept: dict[str, Turn] = {}
        for trace_id, turn in super().turns().items():
            spans = self.traces[trace_id]
            if not (turn.question or turn.answer or any(s.call for s in spans)):
                root = next((s for s in spans if s.root), spans[0])
                note_ignored(
                    f"trace of span {self.names.get(root.span_id)!r}: no question, answer or model call"
                )
                continue
            turn.retrieved = _unique(turn.retrieved)
            self._origins(turn, spans)
            kept[trace_id] = turn
        return kept

    def _origins(self, turn: Turn, spans: list[SpanFacts]) -> None:
        root = next((s for s in spans if s.root), spans[0])
        calls = [s for s in spans if s.call is not None]
        asking = calls[0] if calls else None
        answering = next((s for s in reversed(calls) if s.call and s.call.answer), asking)
        if turn.question:
            own = root.io is not None and bool(root.io.question)
            turn.origin["question"] = (
                self._source(root, "question") if own else self._source(asking, "call question")
            )
            if turn.history:
                turn.origin["history"] = (
                    self._source(root, "question") if own else self._source(asking, "call question")
                )
        if turn.answer:
            own = root.io is not None and bool(root.io.answer)
            turn.origin["answer"] = (
                self._source(root, "answer") if own else self._source(answering, "call answer")
            )
        if turn.tokens is not None:
            turn.origin["tokens"] = "llm.token_count.prompt / completion of the LLM spans"
        retrieved = [self.origins[s.span_id]["retrieved"] for s in spans if s.chunks]
        if retrieved and turn.retrieved:
            turn.origin["retrieved"] = "; ".join(retrieved)
        if turn.latency_ms is not None:
            turn.origin["latency_ms"] = f"{self.wheres[root.span_id]} start_time..end_time"
        if turn.session:
            turn.origin["session"] = "session.id span attribute"
        if turn.user_id:
            turn.origin["user_id"] = "user.id span attribute"

    def _source(self, span: SpanFacts | None, value: str) -> str:
        return self.origins[span.span_id].get(value, "") if span is not None else ""


def _unique(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """Chunks once each, in first-seen order (LlamaIndex nests retriever spans that repeat the documents)."""
    seen: set[str] = set()
    return [c for c in chunks if not (c.id in seen or seen.add(c.id))]  # type: ignore[func-returns-value]


def _read_record(
    mapping: FieldMapping, rec: Record, obj: dict[str, Any], spans: PhoenixTraces, votes: Votes
) -> None:
    if isinstance(obj.get("data"), list) and "next_cursor" in obj:  # a REST API page as saved
        for item in obj["data"]:
            if isinstance(item, dict):
                _read_record(mapping, rec, item, spans, votes)
        return
    if "resourceSpans" in obj:
        for otlp in otlp_spans(rec, obj):
            where = _where(rec, otlp.name)
            line = rec.line or 0
            facts, origin = span_facts(otlp.trace_id, otlp.span_id, otlp.parent_id, otlp.attrs, line, where)
            facts.start, facts.end = otlp.start, otlp.end
            spans.add_span(facts, otlp.name, where, origin)
    elif _is_annotation(obj):
        _annotation(rec, obj, mapping, votes)
    else:
        _phoenix_span(rec, obj, spans)


def _is_annotation(obj: dict[str, Any]) -> bool:
    targets = "span_id" in obj or "context.span_id" in obj or "trace_id" in obj or "session_id" in obj
    spanish = any(key in obj for key in _SPAN_KEYS) or any(key.startswith("attributes.") for key in obj)
    return targets and not spanish


def _phoenix_span(rec: Record, obj: dict[str, Any], spans: PhoenixTraces) -> None:
    flat = flatten({k: v for k, v in obj.items() if not _missing(v)})
    trace_id = required_id(flat.get("context.trace_id"), rec, "context.trace_id", _SPAN_FIX)
    span_id = required_id(flat.get("context.span_id"), rec, "context.span_id", _SPAN_FIX)
    start = parse_ts(flat.get("start_time"), rec, "start_time")
    end = parse_ts(flat.get("end_time"), rec, "end_time")
    if trace_id is None or span_id is None or not rec.ok:
        return
    attrs = {key[len("attributes.") :]: value for key, value in flat.items() if key.startswith("attributes.")}
    if "openinference.span.kind" not in attrs and flat.get("span_kind") is not None:
        attrs["openinference.span.kind"] = flat["span_kind"]
    parent = optional_text(flat.get("parent_id"))
    name = str(flat.get("name") or "")
    where = _where(rec, name)
    facts, origin = span_facts(trace_id, span_id, parent, attrs, rec.line or 0, where)
    facts.start, facts.end = start, end
    spans.add_span(facts, name, where, origin)


def _where(rec: Record, name: str) -> str:
    """``span 'name' (file:line)``, naming a folder's file."""
    return f"span {name!r} ({Path(rec.problems.where(rec.line)).name})"


def _missing(value: Any) -> bool:
    """A table's empty cell: ``None`` or NaN (pandas writes a missing value as NaN)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def span_facts(
    trace_id: str, span_id: str, parent: str | None, attrs: dict[str, Any], line: int, where: str = ""
) -> tuple[SpanFacts, dict[str, str]]:
    """What one span's OpenInference attributes say (``attrs`` with dotted keys, lists flattened or not), and
    the source of each value (``question``, ``answer``, ``call question``, ``call answer``, ``retrieved``)."""
    attrs = flatten(attrs)
    kind = str(attrs.get("openinference.span.kind") or "").upper()
    facts = SpanFacts(trace_id, span_id, line, root=parent is None)
    origin: dict[str, str] = {}
    facts.session = optional_text(attrs.get("session.id"))
    facts.user_id = optional_text(attrs.get("user.id"))
    if facts.root:
        source = attrs.get("input.value")
        facts.io = Call(question_of(source), history_of(source), answer_of(attrs.get("output.value")))
        origin["question"], origin["answer"] = f"{where} input.value", f"{where} output.value"
        add_tags(facts.tags, attrs.get("tag.tags"))
        add_tags(facts.tags, maybe_json(attrs.get("metadata")))
    if kind == "LLM":
        facts.call = _call(attrs, where, origin)
    if kind == "RETRIEVER":
        facts.chunks = _chunks(attrs)
        origin["retrieved"] = f"{where} retrieval.documents"
    note_record(f"span {kind}" if kind else "span")
    return facts, origin


def _call(attrs: dict[str, Any], where: str, origin: dict[str, str]) -> Call:
    inputs, outputs = _messages(attrs, "llm.input_messages"), _messages(attrs, "llm.output_messages")
    source = inputs or attrs.get("input.value")
    output = outputs or attrs.get("output.value")
    origin["call question"] = f"{where} " + ("llm.input_messages" if inputs else "input.value")
    origin["call answer"] = f"{where} " + ("llm.output_messages" if outputs else "output.value")
    prompt = _count(attrs.get("llm.token_count.prompt"))
    completion = _count(attrs.get("llm.token_count.completion"))
    tokens = (
        TokenUsage(input=prompt, output=completion) if prompt is not None and completion is not None else None
    )
    return Call(question_of(source), history_of(source), answer_of(output), tokens)


def _messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """The messages of ``prefix.N.message.*``; a message's text from ``message.contents`` when it has no
    ``message.content`` (the OpenInference form of multi-part content)."""
    items = indexed(attrs, prefix)
    for item in items:
        if _missing(item.get("message.content")):
            parts = indexed(item, "message.contents")
            texts = [
                p.get("message_content.text")
                for p in parts
                if p.get("message_content.type", "text") == "text"
            ]
            item["message.content"] = "\n".join(t for t in texts if isinstance(t, str))
    return items or None


def _count(value: Any) -> int | None:
    """A token count: a whole number of 0 or more (a table may hold it as ``700.0`` or ``"700.0"``)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value) if value >= 0 and value == int(value) else None


def _chunks(attrs: dict[str, Any]) -> list[RetrievedChunk]:
    """A retriever span's chunks: ``retrieval.documents``; a document without ``document.id`` takes the id
    its retriever gave it in ``output.value`` (LangChain's ``{"documents": [{"id": ...}]}``)."""
    documents = indexed(attrs, "retrieval.documents")
    if not documents:  # documents as output, but not LlamaIndex's "<NodeWithScore(...)>" reprs
        listed = maybe_json(attrs.get("output.value"))
        if isinstance(listed, list):
            listed = [d for d in listed if not (isinstance(d, str) and d.startswith("<") and d.endswith(">"))]
        return chunks_of(listed)
    ids = _output_ids(attrs.get("output.value"))
    if ids is not None and len(ids) == len(documents):
        for document, doc_id in zip(documents, ids, strict=True):
            document.setdefault("document.id", doc_id)
    return chunks_of(documents)


def _output_ids(value: Any) -> list[str] | None:
    listed = as_dict(maybe_json(value)).get("documents")
    if not isinstance(listed, list):
        return None
    ids = [d.get("id") if isinstance(d, dict) else None for d in listed]
    return (
        [i for i in ids if isinstance(i, str) and i] if all(isinstance(i, str) and i for i in ids) else None
    )


def _annotation(rec: Record, obj: dict[str, Any], mapping: FieldMapping, votes: Votes) -> None:
    name = obj.get("name", obj.get("annotation_name"))
    kind = str(obj.get("annotator_kind") or "").upper()
    if "span_id" not in obj and "context.span_id" not in obj and "trace_id" not in obj:
        note_ignored(f"session annotation {name!r}: not on one answer")
        return
    if not is_feedback_name(name, mapping):
        if _missing(name) or name == "":
            rec.problem(
                "name",
                "an annotation without its name",
                'add the annotation\'s name: "name": "user_feedback" (in a table, a name or annotation_name '
                "column; an evaluations dataframe's name is the one given to log_span_annotations_dataframe)",
            )
        else:
            note_ignored(f"annotation {name!r}: not a feedback name")
        return
    if kind in _EVALUATORS and not mapping.feedback_names:
        note_ignored(
            f"annotation {name!r} by {kind}: an evaluation, not the user's (name it in feedback_names)"
        )
        return
    key = next(k for k in ("span_id", "context.span_id", "trace_id") if k in obj)
    target = required_id(
        obj.get(key), rec, key, "every annotation needs the span_id (or trace_id) it annotates"
    )
    label, score, field_name = _result(obj)
    feedback = score_feedback(rec, field_name, mapping, kind=None, value=score, label=label)
    at = parse_ts(obj.get("updated_at") or obj.get("created_at"), rec, "created_at")
    if target is not None and rec.ok:
        votes.add(target, feedback, at, rec, field_name)
        note_record(f"annotation {kind or 'feedback'}")


def _result(obj: dict[str, Any]) -> tuple[Any, Any, str]:
    """An annotation's label and score, and the field read: ``result`` nested, ``result.*`` columns, or top-level."""
    nested = isinstance(obj.get("result"), dict)
    flat = {k[len("result.") :]: v for k, v in obj.items() if k.startswith("result.")}
    result = as_dict(obj.get("result")) if nested else flat or obj
    prefix = "result." if nested or flat else ""
    label = None if _missing(result.get("label")) else result.get("label")
    score = None if _missing(result.get("score")) else result.get("score")
    field_name = prefix + ("label" if isinstance(label, str) and label.strip() else "score")
    return label, score, field_name
