"""Reader for OpenAI chat-format JSONL (fine-tuning and chat-completions exports) with feedback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.types import Conversation
from ragreplay.ingest.canonical import parse_messages
from ragreplay.ingest.fields import parse_id, parse_tags
from ragreplay.ingest.jsonl import IdRegistry, json_objects
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record

_ASSISTANT = frozenset({"assistant", "ai", "bot"})


def read_openai(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(line_no, Conversation)`` from OpenAI chat-format JSONL.

    Each line: ``{"messages": [{"role": "user"|"assistant"|"system"|"tool", "content": str | [{"type": "text",
    "text": ...}]}], "id"?, "user_id"|"user"?, "metadata"|"tags"?, "feedback"?}``. Feedback sits on an
    assistant message (``"feedback"``) or in a top-level ``"feedback"`` list with one entry (or null) per
    assistant message, in order. A line without ``id`` gets ``oa_<hash of its content>``. An assistant message
    that only calls tools (``tool_calls``/``function_call`` and no content) is read as a tool message.
    Problems are handled as in :func:`~ragreplay.ingest.canonical.read_canonical`.
    """
    mapping = mapping or FieldMapping()
    log = problems if problems is not None else ProblemLog(str(path))
    ids = IdRegistry()
    for rec, raw in json_objects(path, log, progress):
        conv = _conversation(raw, mapping.rename(raw), rec, mapping, ids)
        if conv is not None and rec.ok:
            yield rec.line or 0, conv
    if problems is None:
        log.raise_if_any()


def _conversation(
    raw: dict[str, Any], obj: dict[str, Any], rec: Record, mapping: FieldMapping, ids: IdRegistry
) -> Conversation | None:
    id_key = "id" if "id" in obj or "conversation_id" not in obj else "conversation_id"
    if obj.get(id_key) is None:
        conv_id: str | None = "oa_" + content_hash(raw)
    else:
        conv_id = parse_id(obj[id_key], rec, mapping.source(id_key))
    if conv_id is not None:
        ids.check(conv_id, rec, mapping.source(id_key))
    raw_messages = _with_feedback(obj.get("messages"), obj.get("feedback"), rec, mapping)
    messages = parse_messages(raw_messages, rec, mapping)
    tags_key = "tags" if obj.get("tags") is not None else "metadata"
    tags = parse_tags(obj.get(tags_key), rec, mapping.source(tags_key))
    user = obj.get("user_id", obj.get("user"))
    if user is None:
        user = tags.pop("user_id", None)
    if not rec.ok or conv_id is None or messages is None:
        return None
    return Conversation(id=conv_id, messages=messages, user_id=None if user is None else str(user), tags=tags)


def _is_assistant(message: Any, mapping: FieldMapping) -> bool:
    if not isinstance(message, dict):
        return False
    role = str(mapping.rename(message).get("role", "")).strip().lower()
    return role in _ASSISTANT or mapping.role_synonyms.get(role) == "ai"


def _with_feedback(messages: Any, feedback: Any, rec: Record, mapping: FieldMapping) -> Any:
    """``messages`` with tool-call-only assistant turns made tool turns, and top-level feedback in place."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for m in messages:
        if _is_assistant(m, mapping):
            renamed = mapping.rename(m)
            if renamed.get("content") in (None, "") and (m.get("tool_calls") or m.get("function_call")):
                m = {**m, mapping.source("role"): "tool", mapping.source("content"): ""}
        out.append(m)
    if feedback is None:
        return out
    field = mapping.source("feedback")
    positions = [i for i, m in enumerate(messages) if _is_assistant(m, mapping)]
    if not isinstance(feedback, list) or len(feedback) != len(positions):
        got = f"{len(feedback)} values" if isinstance(feedback, list) else f"a {type(feedback).__name__}"
        rec.problem(
            field,
            f"top-level feedback must be a list with one entry per assistant message "
            f"({len(positions)}), got {got}",
            "use null for assistant messages without feedback, or put feedback on each assistant message",
        )
        return out
    for value, i in zip(feedback, positions, strict=True):
        if value is None:
            continue
        if mapping.rename(out[i]).get("feedback") is not None:
            rec.problem(
                f"{mapping.source('messages')}[{i}].{field}",
                "feedback given both on the message and in the top-level feedback list",
                "keep only one of the two",
            )
            continue
        out[i] = {**out[i], field: value}
    return out
