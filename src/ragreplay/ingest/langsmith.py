"""Reader for LangSmith runs with their feedback (JSON Lines or a JSON array, runs and feedback rows mixed).

A run has ``id``, ``run_type`` (``chain``, ``llm``, ``retriever``, ``tool``...), ``inputs``, ``outputs``,
``parent_run_id``, ``trace_id``, ``start_time``/``end_time`` and ``extra.metadata``, as ``Client.list_runs``
returns it (``run.dict()``/``model_dump``) and the bulk export writes it. A feedback row has ``run_id``
(and ``trace_id``), ``key``, ``score``, ``value`` and ``created_at``, as ``Client.list_feedback`` returns it.
The bulk export carries no feedback rows, only each run's ``feedback_stats`` (count and mean per key): they
are read when no row speaks for the trace, and refused where the mean hides disagreeing votes. The thread
(conversation) key is the metadata's ``session_id``, ``thread_id`` or ``conversation_id``; the run's own
``session_id`` is its tracing project, not a thread. See docs/importers.md for the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, Feedback, RetrievedChunk, TokenUsage
from ragreplay.ingest.fields import parse_ts
from ragreplay.ingest.json_records import trace_records
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import answer_of, as_dict, chunks_of, history_of, question_of
from ragreplay.ingest.trace_turns import (
    Turn,
    add_tags,
    optional_text,
    required_id,
    span_ms,
    token_counts,
    voted_conversations,
)

#: Metadata keys that name a LangSmith thread, in the order they are looked for.
THREAD_KEYS = ("session_id", "thread_id", "conversation_id")
_NOT_TAGS = frozenset({*THREAD_KEYS, "user_id", "revision_id"})
_STATS_FIX = (
    "export the feedback rows too (Client.list_feedback(run_ids=...) as JSON Lines) and add them to the file: "
    "the bulk export keeps only each key's mean"
)


@dataclass
class _Run:
    line: int
    kind: str
    parent: str | None
    trace: str | None
    start: datetime | None
    end: datetime | None
    inputs: Any = None
    outputs: Any = None
    tokens: TokenUsage | None = None
    chunks: list[RetrievedChunk] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: Any = None


def read_langsmith(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(first line, Conversation)`` from LangSmith runs and feedback: a conversation per thread.

    The whole file is read before the first conversation is yielded (feedback may come last); problems are
    handled as in :func:`~ragreplay.ingest.canonical.read_canonical`.
    """
    reader = _Reader(mapping or FieldMapping(), problems if problems is not None else ProblemLog(str(path)))
    for rec, obj in trace_records(path, reader.log, progress):
        reader.add(rec, obj)
    yield from voted_conversations(
        reader.log,
        problems is None,
        reader.turns,
        (reader.stats, reader.root_of, "feedback_stats"),
        (reader.votes, reader.root_of, "feedback row"),
    )


def _tokens(obj: dict[str, Any]) -> TokenUsage | None:
    counts = (obj.get("prompt_tokens"), obj.get("completion_tokens"))
    if not all(isinstance(c, int) for c in counts):
        usage = as_dict(as_dict(as_dict(obj.get("outputs")).get("llm_output")).get("token_usage"))
        counts = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
    return token_counts(*counts)


class _Reader:
    def __init__(self, mapping: FieldMapping, log: ProblemLog) -> None:
        self.mapping = mapping
        self.log = log
        self.runs: dict[str, _Run] = {}
        self.trace_ids: set[str] = set()
        self.votes = Votes()
        self.stats = Votes()

    def add(self, rec: Record, obj: dict[str, Any]) -> None:
        """Read one record: a run, or a feedback row."""
        if "run_type" in obj:
            self._run(rec, obj)
        elif "key" in obj and ("run_id" in obj or "trace_id" in obj):
            self._feedback(rec, obj)
        else:
            rec.problem(
                None,
                "not a LangSmith run (no run_type) or feedback row (no key and run_id)",
                "export runs with Client.list_runs and feedback with Client.list_feedback, or pick another --format",
            )

    def _run(self, rec: Record, obj: dict[str, Any]) -> None:
        run_id = required_id(obj.get("id"), rec, "id", "every run needs its id")
        start = parse_ts(obj.get("start_time"), rec, "start_time")
        end = parse_ts(obj.get("end_time"), rec, "end_time")
        if run_id is None or not rec.ok:
            return
        if run_id in self.runs:
            rec.problem(
                "id", f"run {run_id!r} repeats line {self.runs[run_id].line}", "keep one line per run"
            )
            return
        kind = str(obj.get("run_type") or "").lower()
        parent, trace = optional_text(obj.get("parent_run_id")), optional_text(obj.get("trace_id"))
        run = _Run(rec.line or 0, kind, parent, trace, start, end, tokens=_tokens(obj))
        run.metadata = as_dict(as_dict(obj.get("extra")).get("metadata", obj.get("metadata")))
        if parent is None or kind == "llm":
            run.inputs, run.outputs = obj.get("inputs"), obj.get("outputs")
        if parent is None:
            run.tags = obj.get("tags")
            self._stats(rec, run_id, obj.get("feedback_stats"))
        if kind == "retriever":
            run.chunks = chunks_of(obj.get("outputs"))
        self.runs[run_id] = run
        if trace is not None or parent is None:
            self.trace_ids.add(trace or run_id)

    def _stats(self, rec: Record, run_id: str, stats: Any) -> None:
        if not isinstance(stats, dict):
            return
        for key, entry in stats.items():
            if not is_feedback_name(key, self.mapping) or not isinstance(entry, dict):
                continue
            where = f"feedback_stats.{key}"
            values = as_dict(entry.get("values"))
            labels = [label for label, count in values.items() if count]
            n, mean = entry.get("n"), entry.get("avg")
            if len(labels) > 1 or (not labels and n != 1 and mean not in (0, 1)):
                rec.problem(
                    where, f"{n} votes with mixed values (mean {mean!r}): no single feedback", _STATS_FIX
                )
                continue
            feedback = score_feedback(
                rec, where, self.mapping, kind=None, value=mean, label=labels[0] if labels else None
            )
            self.stats.add(run_id, feedback, None, rec, where)

    def _feedback(self, rec: Record, obj: dict[str, Any]) -> None:
        if not is_feedback_name(obj.get("key"), self.mapping):
            return
        target_field = "run_id" if obj.get("run_id") is not None else "trace_id"
        target = required_id(obj.get(target_field), rec, target_field, "every feedback row needs its run_id")
        at = parse_ts(obj.get("modified_at") or obj.get("created_at"), rec, "created_at")
        label = obj.get("value") if isinstance(obj.get("value"), str) else None
        value_field = "value" if label is not None else "score"
        value = obj.get("score") if obj.get("score") is not None else obj.get("value")
        feedback: Feedback | None = score_feedback(
            rec, value_field, self.mapping, kind=None, value=value, label=label
        )
        if target is not None and rec.ok:
            self.votes.add(target, feedback, at, rec, value_field)

    def root_of(self, run_id: str) -> str | None:
        """The id of the root run of ``run_id``'s trace (its ``trace_id``, else up the parents); ``None`` if unknown."""
        if run_id not in self.runs:
            return run_id if run_id in self.trace_ids else None
        seen: set[str] = set()
        current: str | None = run_id
        while current is not None and current in self.runs and current not in seen:
            seen.add(current)
            run = self.runs[current]
            if run.trace is not None:
                return run.trace
            if run.parent is None:
                return current
            current = run.parent
        return current if current is not None and current not in self.runs else None

    def turns(self) -> dict[str, Turn]:
        """Each trace's turn: the root run's question and answer, its model calls and retrievers."""
        by_trace: dict[str, list[_Run]] = {}
        for run_id, run in self.runs.items():
            root = self.root_of(run_id)
            by_trace.setdefault(root or run_id, []).append(run)
        return {trace_id: self._turn(trace_id, runs) for trace_id, runs in by_trace.items()}

    def _turn(self, trace_id: str, runs: list[_Run]) -> Turn:
        root = self.runs.get(trace_id)
        runs.sort(key=lambda r: (r.start.timestamp() if r.start else float("inf"), r.line))
        calls = [r for r in runs if r.kind == "llm"]
        turn = Turn(trace_id=trace_id, line=min(r.line for r in runs))
        if root is not None:
            metadata = root.metadata
            turn.session = next(
                (optional_text(metadata.get(k)) for k in THREAD_KEYS if metadata.get(k)), None
            )
            turn.user_id = optional_text(metadata.get("user_id"))
            turn.start, turn.latency_ms = root.start, span_ms(root.start, root.end)
            turn.question, turn.history = question_of(root.inputs), history_of(root.inputs)
            turn.answer, turn.tokens = answer_of(root.outputs), root.tokens
            add_tags(turn.tags, root.tags)
            add_tags(
                turn.tags,
                {k: v for k, v in metadata.items() if k not in _NOT_TAGS and not k.startswith("ls_")},
            )
        if calls and not turn.question:
            turn.question, turn.history = question_of(calls[0].inputs), history_of(calls[0].inputs)
        if calls and not turn.answer:
            turn.answer = answer_of(calls[-1].outputs)
        used = [c.tokens for c in calls if c.tokens is not None]
        if turn.tokens is None and used:
            turn.tokens = sum(used[1:], used[0])
        turn.retrieved = [chunk for run in runs for chunk in run.chunks]
        return turn
