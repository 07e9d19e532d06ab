"""Reader for Langfuse exports: traces, observations and scores (JSON Lines or a JSON array, any mix).

A record is a trace (``id``, ``sessionId``, ``input``, ``output``...), an observation (``traceId`` and
``type``: ``GENERATION``, ``SPAN``, ``EVENT``, ``RETRIEVER``...) or a score (``traceId``, ``name``,
``value``, ``dataType``, ``stringValue``), as the UI's and the batch export's trace, observation and score
tables hold them and as the public API returns them (``GET /api/public/traces/{id}`` nests ``observations``
and ``scores``; a ``{"data": [...], "meta": ...}`` page holds records under ``data``). The tables may come as
one file each, concatenated. See docs/importers.md for the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, RetrievedChunk, Role, TokenUsage
from ragreplay.ingest.fields import parse_number, parse_ts
from ragreplay.ingest.json_records import trace_records
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import answer_of, chunks_of, history_of, question_of
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


@dataclass
class _Call:
    """One model call (a GENERATION observation)."""

    start: datetime | None
    line: int
    question: str
    history: list[tuple[Role, str]]
    answer: str
    tokens: TokenUsage | None


@dataclass
class _Trace:
    turn: Turn
    seen: int | None = None  # the line of the trace record itself
    calls: list[_Call] = field(default_factory=list)
    retrievals: list[tuple[float, int, list[RetrievedChunk]]] = field(default_factory=list)
    starts: list[datetime] = field(default_factory=list)
    ends: list[datetime] = field(default_factory=list)


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
    yield from voted_conversations(
        reader.log, problems is None, reader.turns, (reader.votes, lambda target: target, "score")
    )


def _tokens(obj: dict[str, Any]) -> TokenUsage | None:
    for key in ("usageDetails", "usage"):
        usage = obj.get(key)
        if isinstance(usage, dict):
            tokens = token_counts(usage.get("input"), usage.get("output"))
            if tokens is not None:
                return tokens
    prompt, completion = obj.get("promptTokens"), obj.get("completionTokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return TokenUsage(input=max(prompt, 0), output=max(completion, 0))
    return None


class _Reader:
    def __init__(self, mapping: FieldMapping, log: ProblemLog) -> None:
        self.mapping = mapping
        self.log = log
        self.traces: dict[str, _Trace] = {}
        self.votes = Votes()

    def _trace(self, trace_id: str, line: int) -> _Trace:
        if trace_id not in self.traces:
            self.traces[trace_id] = _Trace(Turn(trace_id=trace_id, line=line))
        return self.traces[trace_id]

    def add(self, rec: Record, obj: dict[str, Any], prefix: str = "", trace_id: str | None = None) -> None:
        """Read one record: a score, an observation or a trace (with any nested observations and scores)."""
        if "dataType" in obj or (
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
                "not a Langfuse trace, observation or score (no id, traceId or dataType)",
                "export traces, observations and scores from Langfuse as JSON, or pick another --format",
            )

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
        trace.seen = rec.line or 0
        turn = trace.turn
        turn.start = parse_ts(obj.get("timestamp"), rec, prefix + "timestamp")
        turn.session = optional_text(obj.get("sessionId"))
        turn.user_id = optional_text(obj.get("userId"))
        turn.question, turn.history = question_of(obj.get("input")), history_of(obj.get("input"))
        turn.answer = answer_of(obj.get("output"))
        seconds = parse_number(obj.get("latency"), rec, prefix + "latency")
        turn.latency_ms = None if seconds is None else seconds * 1000
        add_tags(turn.tags, obj.get("tags"))
        add_tags(turn.tags, obj.get("metadata"))
        for key, method in (("observations", self._observation), ("scores", self._score)):
            for i, item in enumerate(obj.get(key) or []):
                if isinstance(item, dict):  # the API lists ids only, except in a single trace's detail
                    method(rec, item, f"{prefix}{key}[{i}].", trace_id)

    def _observation(self, rec: Record, obj: dict[str, Any], prefix: str, parent: str | None) -> None:
        trace_id = required_id(obj.get("traceId", parent), rec, prefix + "traceId", _TRACE_FIX)
        start = parse_ts(obj.get("startTime"), rec, prefix + "startTime")
        end = parse_ts(obj.get("endTime"), rec, prefix + "endTime")
        if trace_id is None or not rec.ok:
            return
        trace = self._trace(trace_id, rec.line or 0)
        trace.starts += [start] if start else []
        trace.ends += [end] if end else []
        kind = str(obj.get("type") or "").upper()
        name = str(obj.get("name") or "").lower()
        line = rec.line or 0
        if kind == "GENERATION":
            source = obj.get("input")
            call = _Call(
                start, line, question_of(source), history_of(source), answer_of(obj.get("output")), None
            )
            call.tokens = _tokens(obj)
            trace.calls.append(call)
        elif kind == "RETRIEVER" or (kind in ("SPAN", "EVENT", "") and "retriev" in name):
            at = start.timestamp() if start else float("inf")
            trace.retrievals.append((at, line, chunks_of(obj.get("output"))))

    def _score(self, rec: Record, obj: dict[str, Any], prefix: str, parent: str | None) -> None:
        if not is_feedback_name(obj.get("name"), self.mapping):
            return
        if obj.get("traceId", parent) is None and obj.get("sessionId") is not None:
            return  # a score on a whole session names no answer: it is not per-message feedback
        trace_id = required_id(obj.get("traceId", parent), rec, prefix + "traceId", _TRACE_FIX)
        at = parse_ts(obj.get("timestamp"), rec, prefix + "timestamp")
        kind = obj.get("dataType")
        value_field = prefix + ("stringValue" if str(kind).upper() == "CATEGORICAL" else "value")
        feedback = score_feedback(
            rec, value_field, self.mapping, kind=kind, value=obj.get("value"), label=obj.get("stringValue")
        )
        if trace_id is not None and rec.ok:
            self.votes.add(trace_id, feedback, at, rec, value_field)

    def turns(self) -> dict[str, Turn]:
        """Each trace's turn, completed from its model calls and retrievals."""
        out: dict[str, Turn] = {}
        for trace_id, trace in self.traces.items():
            turn = trace.turn
            calls = sorted(
                trace.calls, key=lambda c: (c.start.timestamp() if c.start else float("inf"), c.line)
            )
            if calls and not turn.question:
                turn.question, turn.history = calls[0].question, calls[0].history
            if calls and not turn.answer:
                turn.answer = calls[-1].answer
            used = [c.tokens for c in calls if c.tokens is not None]
            turn.tokens = sum(used[1:], used[0]) if used else None
            turn.retrieved = [
                c for *_, chunks in sorted(trace.retrievals, key=lambda r: r[:2]) for c in chunks
            ]
            if turn.start is None and trace.starts:
                turn.start = min(trace.starts)
            if turn.latency_ms is None and trace.starts and trace.ends:
                turn.latency_ms = span_ms(min(trace.starts), max(trace.ends))
            out[trace_id] = turn
        return out
