"""Reader for Langfuse exports: traces, observations and scores (JSON Lines or a JSON array, any mix).

A record is a trace (``id``, ``sessionId``, ``input``, ``output``...), an observation (``traceId`` and
``type``: ``GENERATION``, ``SPAN``, ``EVENT``, ``RETRIEVER``...) or a score (``traceId``, ``name``,
``value``, ``dataType``, ``stringValue``), as the UI's and the batch export's trace, observation and score
tables hold them, as the blob-storage export writes them (snake_case columns: ``trace_id``, ``start_time``,
``data_type``...), and as the public API returns them (``GET /api/public/traces/{id}`` nests ``observations``
and ``scores``; a ``{"data": [...], "meta": ...}`` page holds records under ``data``). The tables may come as
one file each, concatenated. Besides records, a line may hold:

- a trace download of the UI, ``{"trace": {...}, "observations": [...]}`` (the trace nests its ``scores``),
  or the newer ``{"observations": [...], "scores": [...]}`` (one object, or an array of them);
- an ingestion batch as the SDKs send it, ``{"batch": [{"type": "trace-create", "body": {...}}, ...]}``
  (``*-create`` and ``*-update`` events of one id are merged, later values winning).

An observation listed twice (a download nests it in the trace and lists it again) is read once. The question
and answer come from the trace's own ``input``/``output``; where they are empty or no rule reads them, from the
root observation's, else the first generation's question and the last generation's non-empty answer. See
docs/importers.md for the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, TokenUsage
from ragreplay.ingest.fields import parse_number, parse_ts
from ragreplay.ingest.json_records import trace_records
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.provenance import note_ignored, note_record
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import answer_of, chunks_of, history_of, maybe_json, question_of
from ragreplay.ingest.trace_turns import (
    Turn,
    add_tags,
    optional_text,
    required_id,
    span_ms,
    token_counts,
    voted_conversations,
)

_TRACE_FIX = 'every observation and score needs the "traceId" of its trace'
#: In an ingestion batch, an update resends these; the first one sent is when the trace or observation began.
_FIRST_WINS = frozenset({"timestamp", "startTime"})
#: The blob-storage export's snake_case columns, as the API and UI spell them.
_CAMEL = {
    "trace_id": "traceId",
    "session_id": "sessionId",
    "user_id": "userId",
    "project_id": "projectId",
    "start_time": "startTime",
    "end_time": "endTime",
    "parent_observation_id": "parentObservationId",
    "observation_id": "observationId",
    "data_type": "dataType",
    "string_value": "stringValue",
    "usage_details": "usageDetails",
}


@dataclass
class _Obs:
    """One observation as read (the last copy of its id wins)."""

    key: str  # its id (or its place in the file when it has none)
    line: int
    kind: str
    name: str
    start: datetime | None
    end: datetime | None
    parent: str | None
    input: Any
    output: Any
    tokens: TokenUsage | None


@dataclass
class _Trace:
    turn: Turn
    seen: int | None = None  # the line of the trace record itself
    observations: dict[str, _Obs] = field(default_factory=dict)


def read_langfuse(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from a Langfuse export: a conversation per session (or trace).

    The whole file is read before the first conversation is yielded (a score may come last); problems are
    handled as in :func:`~ragreplay.ingest.canonical.read_canonical`.
    """
    reader = _Reader(mapping or FieldMapping(), problems if problems is not None else ProblemLog(str(path)))
    for rec, obj in trace_records(path, reader.log, progress):
        data = obj.get("data")
        items: list[Any] = data if isinstance(data, list) and "meta" in obj else [obj]
        for i, item in enumerate(items):
            prefix = f"data[{i}]." if item is not obj else ""
            if isinstance(item, dict):
                reader.add(rec, item, prefix)
    reader.flush_batches()
    yield from voted_conversations(
        reader.log, problems is None, reader.turns, (reader.votes, lambda target: target, "score")
    )


def _camel(obj: dict[str, Any]) -> dict[str, Any]:
    """A blob-storage export row with the API's key names (a record already in camelCase is returned as is)."""
    if not _CAMEL.keys() & obj.keys():
        return obj
    return {_CAMEL.get(key, key): value for key, value in obj.items()}


def _count(value: Any) -> int | None:
    """A token count: a whole number, or its digits as text (ClickHouse quotes 64-bit integers in JSON)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tokens(obj: dict[str, Any]) -> TokenUsage | None:
    for key in ("usageDetails", "usage"):
        usage = maybe_json(obj.get(key))
        if isinstance(usage, dict):
            tokens = token_counts(_count(usage.get("input")), _count(usage.get("output")))
            if tokens is not None:
                return tokens
    prompt, completion = obj.get("promptTokens"), obj.get("completionTokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return TokenUsage(input=max(prompt, 0), output=max(completion, 0))
    return None


def _start_key(obs: _Obs) -> tuple[float, int]:
    return (obs.start.timestamp() if obs.start else float("inf"), obs.line)


class _Reader:
    def __init__(self, mapping: FieldMapping, log: ProblemLog) -> None:
        self.mapping = mapping
        self.log = log
        self.traces: dict[str, _Trace] = {}
        self.votes = Votes()
        # ingestion batches: every event body of an id merged, with the record it last came from
        self.batch_traces: dict[str, tuple[Record, str, dict[str, Any]]] = {}
        self.batch_observations: dict[str, tuple[Record, str, dict[str, Any]]] = {}

    def _trace(self, trace_id: str, line: int) -> _Trace:
        if trace_id not in self.traces:
            self.traces[trace_id] = _Trace(Turn(trace_id=trace_id, line=line))
        return self.traces[trace_id]

    def add(self, rec: Record, obj: dict[str, Any], prefix: str = "", trace_id: str | None = None) -> None:
        """Read one record: a score, an observation, a trace (with any nested observations and scores), a
        UI trace download or an ingestion batch."""
        obj = _camel(obj)
        if isinstance(obj.get("batch"), list):
            self._batch(rec, obj["batch"], prefix + "batch")
        elif isinstance(obj.get("trace"), dict) or (
            "id" not in obj and isinstance(obj.get("observations", obj.get("scores")), list)
        ):
            self._download(rec, obj, prefix)
        elif "dataType" in obj or (
            "value" in obj and "name" in obj and "type" not in obj and "input" not in obj
        ):
            self._score(rec, obj, prefix, trace_id)
        elif "traceId" in obj or "startTime" in obj or (trace_id is not None and "type" in obj):
            self._observation(rec, obj, prefix, trace_id)
        elif "id" in obj:
            self._trace_record(rec, obj, prefix)
        else:
            rec.problem(
                prefix.rstrip(".") or None,
                "not a Langfuse trace, observation, score, trace download or ingestion batch "
                "(no id, traceId, dataType, trace, observations or batch)",
                "export traces, observations and scores from Langfuse as JSON, or pick another --format",
            )

    def _download(self, rec: Record, obj: dict[str, Any], prefix: str) -> None:
        """A trace download: ``{"trace": {...}, "observations": [...]}`` or ``{"observations", "scores"}``."""
        trace = obj.get("trace")
        parent = None
        if isinstance(trace, dict):
            self._trace_record(rec, _camel(trace), prefix + "trace.")
            parent = optional_text(trace.get("id"))
        for key, method in (("observations", self._observation), ("scores", self._score)):
            for i, item in enumerate(obj.get(key) or []):
                if isinstance(item, dict):
                    method(rec, _camel(item), f"{prefix}{key}[{i}].", parent)
        if obj.get("corrections"):
            note_ignored("correction: an edited output, not feedback")

    def _batch(self, rec: Record, events: list[Any], prefix: str) -> None:
        """An ingestion batch: trace, observation and score events; bodies of one id merged in order."""
        for i, event in enumerate(events):
            if not isinstance(event, dict) or not isinstance(event.get("body"), dict):
                note_ignored("ingestion event without a body")
                continue
            kind, _, action = str(event.get("type") or "").rpartition("-")
            body, where = event["body"], f"{prefix}[{i}].body."
            if action not in ("create", "update") or kind in ("sdk", ""):
                note_ignored(f"ingestion event {event.get('type')!r}: not a trace, observation or score")
            elif kind == "score":
                self._score(rec, body, where, None)
            else:
                target = self.batch_traces if kind == "trace" else self.batch_observations
                if kind not in ("trace", "observation"):
                    body = {**body, "type": kind.upper()}
                key = str(body.get("id") or f"{rec.line}:{i}")
                _, _, merged = target.get(key, (rec, where, {}))
                for name, value in body.items():
                    if value is not None and (name not in _FIRST_WINS or name not in merged):
                        merged[name] = value
                target[key] = (rec, f"merged {kind}-create/update bodies, ", merged)

    def flush_batches(self) -> None:
        """Read the traces and observations the ingestion batches put together."""
        for rec, where, body in self.batch_traces.values():
            self._trace_record(rec, body, where)
        for rec, where, body in self.batch_observations.values():
            self._observation(rec, body, where, None)
        self.batch_traces.clear()
        self.batch_observations.clear()

    def _trace_record(self, rec: Record, obj: dict[str, Any], prefix: str) -> None:
        trace_id = required_id(obj.get("id"), rec, prefix + "id", "give every trace its id")
        if trace_id is None:
            return
        trace = self._trace(trace_id, rec.line or 0)
        if trace.seen is not None:
            rec.problem(
                prefix + "id", f"trace {trace_id!r} repeats line {trace.seen}", "keep one line per trace"
            )
            return
        note_record("trace")
        trace.seen = rec.line or 0
        turn = trace.turn
        turn.start = parse_ts(obj.get("timestamp"), rec, prefix + "timestamp")
        turn.session = optional_text(obj.get("sessionId")) or turn.session
        turn.user_id = optional_text(obj.get("userId")) or turn.user_id
        _set(turn, "question", question_of(obj.get("input")), f"{prefix}input (line {rec.line})")
        _set(turn, "answer", answer_of(obj.get("output")), f"{prefix}output (line {rec.line})")
        turn.history = history_of(obj.get("input")) if turn.question else []
        seconds = parse_number(obj.get("latency"), rec, prefix + "latency")
        if seconds is not None:
            turn.latency_ms = seconds * 1000
            turn.origin["latency_ms"] = f"{prefix}latency"
        for key, origin in (("sessionId", "session"), ("userId", "user_id")):
            if optional_text(obj.get(key)):
                turn.origin[origin] = prefix + key
        add_tags(turn.tags, obj.get("tags"))
        add_tags(turn.tags, maybe_json(obj.get("metadata")))
        for key, method in (("observations", self._observation), ("scores", self._score)):
            for i, item in enumerate(obj.get(key) or []):
                if isinstance(item, dict):  # the API lists ids only, except in a single trace's detail
                    method(rec, _camel(item), f"{prefix}{key}[{i}].", trace_id)
        if obj.get("corrections"):
            note_ignored("correction: an edited output, not feedback")

    def _observation(self, rec: Record, obj: dict[str, Any], prefix: str, parent: str | None) -> None:
        trace_id = required_id(obj.get("traceId", parent), rec, prefix + "traceId", _TRACE_FIX)
        start = parse_ts(obj.get("startTime"), rec, prefix + "startTime")
        end = parse_ts(obj.get("endTime"), rec, prefix + "endTime")
        if trace_id is None or not rec.ok:
            return
        trace = self._trace(trace_id, rec.line or 0)
        kind = str(obj.get("type") or "").upper()
        key = str(obj.get("id") or f"{rec.line}:{prefix}")
        if key in trace.observations:
            note_ignored("observation listed twice (the trace's and the download's list): read once")
        else:
            note_record(f"observation {kind or 'without type'}")
        if trace.seen is None:  # no trace record (yet): the observations name its session and user
            trace.turn.session = trace.turn.session or optional_text(obj.get("sessionId"))
            trace.turn.user_id = trace.turn.user_id or optional_text(obj.get("userId"))
        trace.observations[key] = _Obs(
            key=key,
            line=rec.line or 0,
            kind=kind,
            name=str(obj.get("name") or "").lower(),
            start=start,
            end=end,
            parent=optional_text(obj.get("parentObservationId")),
            input=obj.get("input"),
            output=obj.get("output"),
            tokens=_tokens(obj) if kind == "GENERATION" else None,
        )

    def _score(self, rec: Record, obj: dict[str, Any], prefix: str, parent: str | None) -> None:
        if not is_feedback_name(obj.get("name"), self.mapping):
            note_ignored(f"score {obj.get('name')!r}: not a feedback name")
            return
        if obj.get("traceId", parent) is None and obj.get("sessionId") is not None:
            note_ignored("score on a session: names no answer")
            return  # a score on a whole session names no answer: it is not per-message feedback
        trace_id = required_id(obj.get("traceId", parent), rec, prefix + "traceId", _TRACE_FIX)
        at = parse_ts(obj.get("timestamp"), rec, prefix + "timestamp")
        kind = obj.get("dataType")
        value_field = prefix + ("stringValue" if str(kind).upper() == "CATEGORICAL" else "value")
        feedback = score_feedback(
            rec, value_field, self.mapping, kind=kind, value=obj.get("value"), label=obj.get("stringValue")
        )
        if trace_id is not None and rec.ok:
            note_record("score")
            self.votes.add(trace_id, feedback, at, rec, value_field)

    def turns(self) -> dict[str, Turn]:
        """Each trace's turn, completed from its observations: text, tokens, retrievals, start and latency."""
        return {trace_id: _complete(trace) for trace_id, trace in self.traces.items()}


def _set(turn: Turn, what: str, text: str, origin: str) -> None:
    """Set the turn's question or answer to ``text`` (when it has none yet and ``text`` is not blank)."""
    if text.strip() and not getattr(turn, what).strip():
        setattr(turn, what, text)
        turn.origin[what] = origin


def _complete(trace: _Trace) -> Turn:
    turn = trace.turn
    observations = sorted(trace.observations.values(), key=_start_key)
    for obs in (o for o in observations if o.parent is None and o.kind != "GENERATION"):
        where = f"observation {obs.kind} (line {obs.line})"
        if not turn.question.strip() and question_of(obs.input).strip():
            _set(turn, "question", question_of(obs.input), f"{where} input")
            turn.history = history_of(obs.input)
        _set(turn, "answer", answer_of(obs.output), f"{where} output")
    calls = [o for o in observations if o.kind == "GENERATION"]
    for obs in calls:
        if not turn.question.strip() and question_of(obs.input).strip():
            _set(turn, "question", question_of(obs.input), f"observation GENERATION (line {obs.line}) input")
            turn.history = history_of(obs.input)
    for obs in reversed(calls):
        _set(turn, "answer", answer_of(obs.output), f"observation GENERATION (line {obs.line}) output")
    if turn.history:
        turn.origin.setdefault("history", turn.origin.get("question", ""))
    used = [c.tokens for c in _innermost(trace.observations, calls) if c.tokens is not None]
    if used:
        turn.tokens = sum(used[1:], used[0])
        turn.origin["tokens"] = f"usageDetails of {len(used)} GENERATION observation(s)"
    retrievals = [
        o
        for o in observations
        if o.kind == "RETRIEVER" or ("retriev" in o.name and o.kind in ("SPAN", "EVENT", ""))
    ]
    turn.retrieved = [c for obs in retrievals for c in chunks_of(obs.output)]
    if turn.retrieved:
        turn.origin["retrieved"] = f"output of {len(retrievals)} retriever observation(s)"
    starts = [o.start for o in observations if o.start is not None]
    ends = [o.end for o in observations if o.end is not None]
    if turn.start is None and starts:
        turn.start = min(starts)
    if turn.latency_ms is None and starts and ends:
        turn.latency_ms = span_ms(min(starts), max(ends))
        turn.origin["latency_ms"] = "first observation start to last observation end"
    return turn


def _innermost(observations: dict[str, _Obs], calls: list[_Obs]) -> list[_Obs]:
    """The generations no other generation lies inside: a framework's GENERATION around the model client's
    own (Agno around OpenAI, the AI SDK's ``generateText`` around ``doGenerate``) reports the same call twice."""
    outer: set[str] = set()
    for call in calls:
        parent, hops = call.parent, 0
        while parent is not None and parent in observations and hops < len(observations):
            outer.add(parent)
            parent, hops = observations[parent].parent, hops + 1
    return [c for c in calls if c.key not in outer]
