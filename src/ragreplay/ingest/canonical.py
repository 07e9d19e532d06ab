"""Reader for the canonical conversation log: one JSON conversation per line (see docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragreplay.core.types import Conversation, Message
from ragreplay.ingest.canonical_fast import fast_reader
from ragreplay.ingest.fields import build_message, parse_id, parse_tags
from ragreplay.ingest.jsonl import IdRegistry, json_lines, line_objects
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record


def read_canonical(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(line_no, Conversation)`` from a canonical JSONL log.

    Each line: ``{"id", "user_id"?, "tags"?, "messages": [{"role", "content", "feedback"?, "ts"?,
    "retrieved"?, "latency_ms"?, "tokens"?}]}``. Lines with problems are recorded in ``problems`` and not
    yielded; without a ``problems`` log of the caller's, an :class:`~ragreplay.errors.InputError` listing them
    is raised once the file is read.
    """
    mapping = mapping or FieldMapping()
    log = problems if problems is not None else ProblemLog(str(path))
    ids = IdRegistry()
    fast = fast_reader(mapping)
    for rec, text in json_lines(path, log, progress):
        conv = fast(text) if fast is not None else None
        if conv is not None:
            ids.check(conv.id, rec, mapping.source("id"))
        else:  # not the common spelling, or a mistake: read field by field, naming each problem
            objects = line_objects(rec, text)
            conv = (
                conversation_from_object(mapping.rename(objects[0]), rec, mapping, ids) if objects else None
            )
        if conv is not None and rec.ok:
            yield rec.line or 0, conv
    if problems is None:
        log.raise_if_any()


def conversation_from_object(
    obj: dict[str, Any], rec: Record, mapping: FieldMapping, ids: IdRegistry
) -> Conversation | None:
    """A :class:`Conversation` from one (renamed) canonical object, or ``None`` after recording problems."""
    id_key = "id" if "id" in obj or "conversation_id" not in obj else "conversation_id"
    conv_id = parse_id(obj.get(id_key), rec, mapping.source(id_key))
    if conv_id is not None:
        ids.check(conv_id, rec, mapping.source(id_key))
    messages = parse_messages(obj.get("messages"), rec, mapping)
    tags = parse_tags(obj.get("tags"), rec, mapping.source("tags"))
    user_id = obj.get("user_id")
    if user_id is not None and not isinstance(user_id, str | int):
        rec.problem(mapping.source("user_id"), "user id must be a string", 'use "user_id": "u7"')
    if not rec.ok or conv_id is None or messages is None:
        return None
    return Conversation(
        id=conv_id, messages=messages, user_id=None if user_id is None else str(user_id), tags=tags
    )


def parse_messages(value: Any, rec: Record, mapping: FieldMapping) -> tuple[Message, ...] | None:
    """The ``messages`` list of a conversation; ``None`` after recording problems."""
    field = mapping.source("messages")
    if not isinstance(value, list) or not value:
        rec.problem(
            field,
            "messages is missing" if value is None else "messages must be a non-empty list",
            'add "messages": [{"role": "human", "content": "..."}, {"role": "ai", ...}]',
        )
        return None
    built = [build_message(m, rec, field, mapping, i) for i, m in enumerate(value)]
    if any(m is None for m in built):
        return None
    return tuple(m for m in built if m is not None)
