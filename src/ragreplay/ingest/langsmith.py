"""Reader for LangSmith runs with their feedback: JSON Lines, a JSON array, the bulk export's Parquet, a folder.

A run has ``id``, ``run_type`` (``chain``, ``llm``, ``retriever``, ``tool``...), ``inputs``, ``outputs``,
``parent_run_id``, ``trace_id``, ``start_time``/``end_time`` and ``extra.metadata``, as ``Client.list_runs``
returns it (``run.dict()``/``model_dump(mode="json")``, also with ``select=[...]`` leaving fields out), as
``Client.read_run(..., load_child_runs=True)`` nests the trace under ``child_runs``, and as the bulk export writes
it (Parquet: ``inputs``, ``outputs``, ``extra``, ``tags`` and ``feedback_stats`` as JSON text). A feedback row
has ``run_id`` (and ``trace_id``), ``key``, ``score``, ``value``, ``comment`` and ``created_at``, as
``Client.list_feedback`` returns it. The bulk export carries no feedback rows, only each run's
``feedback_stats`` (count and mean per key): they are read for a trace no feedback row speaks for, and refused
where the mean hides disagreeing votes. The thread (conversation) key is the metadata's ``session_id``,
``thread_id`` or ``conversation_id``; the run's own ``session_id`` is its tracing project, not a thread. Token
counts are the root run's ``prompt_tokens``/``completion_tokens`` when LangSmith filled them, else each model
call's ``usage_metadata`` (in its outputs, its generations' message, or ``extra.metadata``) or
``llm_output.token_usage``. See docs/importers.md for the mapping.
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
from ragreplay.ingest.provenance import note_ignored, note_record
from ragreplay.ingest.trace_feedback import Votes, is_feedback_name, score_feedback
from ragreplay.ingest.trace_text import (
    answer_of,
    as_dict,
    chunks_of,
    history_of,
    maybe_json,
    question_of,
)
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
_NOT_TAGS = frozenset({*THREAD_KEYS, "user_id", "revision_id", "usage_metadata"})
#: Metadata the SDKs add themselves (``ls_*`` model facts, the ``LANGSMITH_*``/``LANGCHAIN_*`` environment).
_SDK_PREFIXES = ("ls_", "LANGSMITH_", "LANGCHAIN_")
#: Fields the bulk export writes as JSON text.
_JSON_FIELDS = ("inputs", "outputs", "extra", "tags", "feedback_stats")
#: How deep ``child_runs`` are followed (a run tree is rarely deeper than a few dozen levels).
_MAX_TREE_DEPTH = 64
_STATS_FIX = (
    "export the feedback rows too (Client.list_feedback(run_ids=...) as JSON Lines) and add them to the file: "
    "the bulk export keeps only each key's mean"
)
Usage = tuple[TokenUsage, str]  # the counts and the field they were read from


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
    usage: Usage | None = None
    chunks: list[RetrievedChunk] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: Any = None
    thread: str | None = None  # the run's own ``thread_id``, as newer API responses carry it


@dataclass
class _Stats:
    """A root run's ``feedback_stats`` entry for a feedback key, judged once every feedback row is read."""

    line: int
    run_id: str
    where: str
    entry: dict[str, Any]


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
    reader.finish()
    yield from voted_conversations(
        reader.log,
        problems is None,
        reader.turns,
        (reader.stats, reader.root_of, "feedback_stats"),
        (reader.votes, reader.root_of, "feedback row"),
    )


def _counts(usage: Any) -> TokenUsage | None:
    """Tokens of a usage object: ``input_tokens``/``output_tokens`` (LangChain's ``usage_metadata``) or
    ``prompt_tokens``/``completion_tokens`` (OpenAI's ``usage``, LangChain's ``token_usage``)."""
    usage = as_dict(usage)
    if "input_tokens" in usage or "output_tokens" in usage:
        return token_counts(usage.get("input_tokens"), usage.get("output_tokens"))
    return token_counts(usage.get("prompt_tokens"), usage.get("completion_tokens"))


def _generation_usage(outputs: dict[str, Any]) -> Any:
    """The ``usage_metadata`` of a LangChain LLM result's last generated message, if any."""
    generations = outputs.get("generations")
    last = generations[-1] if isinstance(generations, list) and generations else None
    last = last[-1] if isinstance(last, list) and last else last
    message = as_dict(as_dict(last).get("message"))
    return as_dict(message.get("kwargs")).get("usage_metadata", message.get("usage_metadata"))


def _usage(obj: dict[str, Any], outputs: Any, metadata: dict[str, Any]) -> Usage | None:
    """A run's tokens: LangSmith's own counts when it filled them, else the model's usage wherever written."""
    counts = token_counts(obj.get("prompt_tokens"), obj.get("completion_tokens"))
    if counts is not None and counts.input + counts.output > 0:
        return counts, "prompt_tokens/completion_tokens"
    out = as_dict(outputs)
    for usage, source in (
        (out.get("usage_metadata"), "outputs.usage_metadata"),
        (_generation_usage(out), "outputs.generations[-1].message.kwargs.usage_metadata"),
        (metadata.get("usage_metadata"), "extra.metadata.usage_metadata"),
        (as_dict(out.get("llm_output")).get("token_usage"), "outputs.llm_output.token_usage"),
        (out.get("usage"), "outputs.usage"),
    ):
        found = _counts(usage)
        if found is not None:
            return found, source
    return None


def _retrieved(outputs: Any) -> list[RetrievedChunk]:
    """A retriever run's chunks: LangChain's ``{"documents": [...]}``, or ``@traceable``'s ``{"output": [...]}``."""
    if isinstance(outputs, dict) and outputs.keys() == {"output"}:
        outputs = outputs["output"]
    return chunks_of(outputs)


def _is_tag(key: str) -> bool:
    return key not in _NOT_TAGS and not key.startswith(_SDK_PREFIXES)


class _Reader:
    def __init__(self, mapping: FieldMapping, log: ProblemLog) -> None:
        self.mapping = mapping
        self.log = log
        self.runs: dict[str, _Run] = {}
        self.trace_ids: set[str] = set()
        self.votes = Votes()
        self.stats = Votes()
        self.pending_stats: list[_Stats] = []
        self.conflicts: list[tuple[int, str, str, int]] = []  # line, field, run id, line first read

    def add(self, rec: Record, obj: dict[str, Any]) -> None:
        """Read one record: a run (with any ``child_runs`` nested in it), or a feedback row."""
        if "run_type" in obj:
            self._run(rec, obj, None, "", 0)
        elif "key" in obj and ("run_id" in obj or "trace_id" in obj):
            self._feedback(rec, obj)
        else:
            rec.problem(
                None,
                "not a LangSmith run (no run_type) or feedback row (no key and run_id)",
                "export runs with Client.list_runs and feedback with Client.list_feedback, or pick another --format",
            )

    def _run(self, rec: Record, raw: dict[str, Any], parent_of: str | None, prefix: str, depth: int) -> None:
        obj = {k: maybe_json(v) if k in _JSON_FIELDS else v for k, v in raw.items()}
        run_id = required_id(obj.get("id"), rec, prefix + "id", "every run needs its id")
        start = parse_ts(obj.get("start_time"), rec, prefix + "start_time")
        end = parse_ts(obj.get("end_time"), rec, prefix + "end_time")
        if run_id is None or not rec.ok:
            return
        kind = str(obj.get("run_type") or "").lower()
        parent = optional_text(obj.get("parent_run_id")) or parent_of
        trace = optional_text(obj.get("trace_id"))
        run = _Run(rec.line or 0, kind, parent, trace, start, end)
        if run_id in self.runs:
            self._repeated(rec, prefix, run_id, run)
            return
        note_record(f"run {kind or '(no run_type)'}")
        run.metadata = as_dict(as_dict(obj.get("extra")).get("metadata", obj.get("metadata")))
        run.usage = _usage(obj, obj.get("outputs"), run.metadata)
        is_root = parent is None and trace in (
            None,
            run_id,
        )  # a select=[...] dump may leave parent_run_id out
        if is_root or kind == "llm":
            run.inputs, run.outputs = obj.get("inputs"), obj.get("outputs")
        if is_root:
            run.tags, run.thread = obj.get("tags"), optional_text(obj.get("thread_id"))
            self._stats(rec, run_id, obj.get("feedback_stats"), prefix)
        if kind == "retriever":
            run.chunks = _retrieved(obj.get("outputs"))
        self.runs[run_id] = run
        if trace is not None or is_root:
            self.trace_ids.add(trace or run_id)
        children = obj.get("child_runs")
        if isinstance(children, list) and depth < _MAX_TREE_DEPTH:
            for i, child in enumerate(children):
                if isinstance(child, dict):
                    self._run(rec, child, run_id, f"{prefix}child_runs[{i}].", depth + 1)

    def _repeated(self, rec: Record, prefix: str, run_id: str, run: _Run) -> None:
        """A run id seen before: the same run again (overlapping exports in one folder) is left out; a
        different run under that id is a problem, reported once the file is read (:meth:`finish`)."""
        first = self.runs[run_id]
        if (run.kind, run.parent, run.trace, run.start, run.end) == (
            first.kind,
            first.parent,
            first.trace,
            first.start,
            first.end,
        ):
            note_ignored("run repeated (overlapping exports): the first kept")
            return
        self.conflicts.append((rec.line or 0, prefix + "id", run_id, first.line))

    def _stats(self, rec: Record, run_id: str, stats: Any, prefix: str) -> None:
        if not isinstance(stats, dict):
            return
        for key, entry in stats.items():
            if is_feedback_name(key, self.mapping) and isinstance(entry, dict):
                self.pending_stats.append(
                    _Stats(rec.line or 0, run_id, f"{prefix}feedback_stats.{key}", entry)
                )

    def finish(self) -> None:
        """Once every record is read: the runs that repeat an id, and the ``feedback_stats`` to read."""
        for line, field_name, run_id, first in self.conflicts:
            Record(self.log, line).problem(
                field_name,
                f"run {run_id!r} repeats {self.at(first)} with other times or parents",
                "keep one record per run: export each time window once",
            )
        self._judge_stats()

    def _judge_stats(self) -> None:
        """Read the ``feedback_stats`` of the traces no feedback row speaks for (rows are the votes themselves)."""
        voted = {self.root_of(target) or target for target, *_ in self.votes.items()}
        for stats in self.pending_stats:
            if (self.root_of(stats.run_id) or stats.run_id) in voted:
                note_ignored("feedback_stats: the trace has feedback rows")
                continue
            rec = Record(self.log, stats.line)
            values = as_dict(stats.entry.get("values"))
            labels = [label for label, count in values.items() if count]
            n, mean = stats.entry.get("n"), stats.entry.get("avg")
            if len(labels) > 1 or (not labels and n != 1 and mean not in (0, 1)):
                rec.problem(
                    stats.where,
                    f"{n} votes with mixed values (mean {mean!r}): no single feedback",
                    _STATS_FIX,
                )
                continue
            feedback = score_feedback(
                rec, stats.where, self.mapping, kind=None, value=mean, label=labels[0] if labels else None
            )
            self.stats.add(stats.run_id, feedback, None, rec, stats.where)

    def _feedback(self, rec: Record, obj: dict[str, Any]) -> None:
        key = obj.get("key")
        if not is_feedback_name(key, self.mapping):
            note_ignored(f"feedback {key!r}: not a feedback name")
            return
        if obj.get("run_id") is None and obj.get("trace_id") is None:
            note_ignored(f"feedback {key!r}: on a whole project or thread, not on a run")
            return
        note_record("feedback row")
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
        turn = Turn(trace_id=trace_id, line=min(r.line for r in runs))
        if root is not None:
            _root_facts(turn, root, f"root run at {self.at(root.line)}")
        _call_facts(turn, [r for r in runs if r.kind == "llm"], self.at)
        retrievers = [r for r in runs if r.chunks]
        turn.retrieved = [chunk for run in retrievers for chunk in run.chunks]
        if retrievers:
            turn.origin["retrieved"] = f"run retriever at {self.at(retrievers[0].line)} outputs"
        return turn

    def at(self, line: int) -> str:
        """``file:line`` of a record, for a turn's origins (a folder's line names its own file)."""
        return Path(self.log.where(line)).name


def _root_facts(turn: Turn, root: _Run, where: str) -> None:
    """What the root run (``where``: its record) says: thread, user, time, question, answer, tokens and tags."""
    metadata = root.metadata
    thread_key = next((k for k in THREAD_KEYS if optional_text(metadata.get(k))), None)
    if thread_key is not None:
        turn.session = optional_text(metadata[thread_key])
        turn.origin["session"] = f"{where} extra.metadata.{thread_key}"
    elif root.thread is not None:
        turn.session = root.thread
        turn.origin["session"] = f"{where} thread_id"
    turn.user_id = optional_text(metadata.get("user_id"))
    if turn.user_id is not None:
        turn.origin["user_id"] = f"{where} extra.metadata.user_id"
    turn.start, turn.latency_ms = root.start, span_ms(root.start, root.end)
    if turn.latency_ms is not None:
        turn.origin["latency_ms"] = f"{where} start_time, end_time"
    turn.question, turn.history = question_of(root.inputs), history_of(root.inputs)
    turn.answer = answer_of(root.outputs)
    for name, value in (("question", turn.question), ("history", turn.history)):
        if value:
            turn.origin[name] = f"{where} inputs"
    if turn.answer:
        turn.origin["answer"] = f"{where} outputs"
    if root.usage is not None and root.kind != "llm":
        turn.tokens = root.usage[0]
        turn.origin["tokens"] = f"{where} {root.usage[1]}"
    add_tags(turn.tags, root.tags)
    add_tags(turn.tags, {k: v for k, v in metadata.items() if _is_tag(str(k))})


def _call_facts(turn: Turn, calls: list[_Run], at: Callable[[int], str]) -> None:
    """What the model calls fill in that the root left out: question, answer, tokens (summed); ``at`` names
    a record's ``file:line``."""
    if calls and not turn.question:
        turn.question, turn.history = question_of(calls[0].inputs), history_of(calls[0].inputs)
        turn.origin["question"] = f"run llm at {at(calls[0].line)} inputs"
    if calls and not turn.answer:
        answered = next((c for c in reversed(calls) if answer_of(c.outputs)), None)
        if answered is not None:
            turn.answer = answer_of(answered.outputs)
            turn.origin["answer"] = f"run llm at {at(answered.line)} outputs"
    used = [c.usage for c in calls if c.usage is not None]
    if turn.tokens is None and used:
        turn.tokens = sum((u[0] for u in used[1:]), used[0][0])
        lines = ", ".join(at(c.line) for c in calls if c.usage is not None)
        turn.origin["tokens"] = f"run llm at {lines} {used[0][1]}"
