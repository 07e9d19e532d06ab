"""Field readers shared by every log format: each records a problem on bad input instead of raising."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ragreplay.core.types import Feedback, Message, RetrievedChunk, Role, TokenUsage
from ragreplay.ingest.feedback import FeedbackValueError, parse_feedback
from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record

ROLE_SYNONYMS: dict[str, Role] = {
    "human": Role.HUMAN,
    "user": Role.HUMAN,
    "ai": Role.AI,
    "assistant": Role.AI,
    "bot": Role.AI,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
_ROLE_FIX = (
    "use human/user, ai/assistant/bot, system or tool/function, or map your spelling under "
    "'role_synonyms' in the field mapping"
)
_EPOCH_MS_ABOVE = 1e11  # larger Unix times are milliseconds (1e11 s is the year 5138)


def parse_role(value: Any, rec: Record, field: str, mapping: FieldMapping) -> Role | None:
    """A message role from its common spellings and the mapping's ``role_synonyms``."""
    if not mapping.role_synonyms and isinstance(value, str) and value in ROLE_SYNONYMS:
        return ROLE_SYNONYMS[value]  # the common case, without building normalised copies
    if value is None or (isinstance(value, str) and not value.strip()):
        rec.problem(field, "role is missing", _ROLE_FIX)
        return None
    key = str(value).strip().lower()
    for spelling, role in mapping.role_synonyms.items():
        if spelling.strip().lower() == key:
            return role
    if key in ROLE_SYNONYMS:
        return ROLE_SYNONYMS[key]
    rec.problem(field, f"unknown role {value!r}", _ROLE_FIX)
    return None


def parse_content(value: Any, rec: Record, field: str) -> str | None:
    """Message text: a string, or a list of ``{"type": "text", "text": ...}`` parts joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if all(isinstance(p, dict) for p in value):
            return "\n".join(texts)
    if value is None:
        rec.problem(field, "content is missing", 'add the message text (use "" for an empty message)')
    else:
        rec.problem(
            field,
            f"content must be text, got {type(value).__name__}",
            'use a string or [{"type": "text", ...}]',
        )
    return None


def parse_ts(value: Any, rec: Record, field: str) -> datetime | None:
    """A timestamp (see :func:`read_ts`); a value that is none is recorded as a problem."""
    try:
        return read_ts(value)
    except ValueError:
        rec.problem(
            field,
            f"{value!r} is not a timestamp",
            "use ISO 8601 like 2026-10-01T09:14:00Z, or Unix seconds, or leave it empty",
        )
        return None


def read_ts(value: Any) -> datetime | None:
    """A timestamp: ISO 8601 (naive ones are taken as UTC) or Unix seconds/milliseconds; empty means none.

    Raises ``ValueError`` for anything else.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = _as_float(value)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                number = None
    if number is not None and math.isfinite(number):
        try:
            return datetime.fromtimestamp(number / 1000 if number > _EPOCH_MS_ABOVE else number, tz=UTC)
        except (OverflowError, OSError, ValueError):
            pass
    raise ValueError(f"{value!r} is not a timestamp")


def parse_number(value: Any, rec: Record, field: str, *, integer: bool = False) -> float | None:
    """A non-negative number (or integer); empty means none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = _as_float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0 or (integer and not number.is_integer()):
        kind = "a whole number" if integer else "a number"
        rec.problem(field, f"{value!r} is not {kind} >= 0", f"use {kind} or leave it empty")
        return None
    return number


def _as_float(value: Any) -> float:
    """``float(value)``, but an integer too large for a float is infinite rather than an ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def parse_tokens(value: Any, rec: Record, field: str) -> TokenUsage | None:
    """Token counts from ``{"in", "out"}`` (or ``input/output``, ``prompt_tokens/completion_tokens``)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        rec.problem(field, "tokens must be an object", 'use {"in": 900, "out": 60}')
        return None
    counts = []
    for names in (("in", "input", "prompt_tokens"), ("out", "output", "completion_tokens")):
        name = next((n for n in names if n in value), names[0])
        counts.append(parse_number(value.get(name), rec, f"{field}.{name}", integer=True) or 0)
    return TokenUsage(input=int(counts[0]), output=int(counts[1]))


def parse_retrieved(value: Any, rec: Record, field: str, separator: str = ";") -> tuple[RetrievedChunk, ...]:
    """Retrieved chunks: a list of ids or of ``{id, score, text}``; in text, a JSON list or ``a;b;c``."""
    if value is None:
        return ()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        if not text.startswith("["):
            return tuple(RetrievedChunk(id=part.strip()) for part in text.split(separator) if part.strip())
        try:
            value = parse_json(text)
        except JsonTextError as exc:
            rec.problem(field, exc.message, exc.fix)
            return ()
        except json.JSONDecodeError as exc:
            rec.problem(
                field, f"is not a valid JSON list ({exc.msg})", f'use ["doc1", "doc2"] or doc1{separator}doc2'
            )
            return ()
    if not isinstance(value, list):
        rec.problem(field, "retrieved chunks must be a list", 'use [{"id": "doc12#3", "score": 0.81}, ...]')
        return ()
    chunks: list[RetrievedChunk] = []
    for i, item in enumerate(value):
        if isinstance(item, str | int) and not isinstance(item, bool):
            chunks.append(RetrievedChunk(id=str(item)))
        elif isinstance(item, dict) and isinstance(item.get("id"), str | int):
            score = parse_number(item.get("score"), rec, f"{field}[{i}].score") if "score" in item else None
            chunk_text = item.get("text")
            chunks.append(
                RetrievedChunk(
                    id=str(item["id"]), score=score, text=chunk_text if isinstance(chunk_text, str) else None
                )
            )
        else:
            rec.problem(
                f"{field}[{i}]", "a retrieved chunk needs an id", 'use {"id": "doc12#3", "score": 0.81}'
            )
    return tuple(chunks)


def stringify(value: Any) -> str:
    """A tag value as text: strings as they are, anything else as compact JSON (``true``, ``3``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse_tags(value: Any, rec: Record, field: str) -> dict[str, str]:
    """Tags as a ``str -> str`` dict; non-string values are stringified, null values dropped."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        rec.problem(field, "tags must be an object", 'use {"department": "hr"}')
        return {}
    return {str(k): stringify(v) for k, v in value.items() if v is not None}


def parse_feedback_value(value: Any, rec: Record, field: str, mapping: FieldMapping) -> Feedback | None:
    """Feedback through :func:`~ragreplay.ingest.feedback.parse_feedback` with the mapping's settings."""
    try:
        return parse_feedback(
            value, synonyms=mapping.feedback_synonyms, rating_threshold=mapping.rating_threshold
        )
    except FeedbackValueError as exc:
        rec.problem(field, str(exc), exc.fix)
        return None


def parse_id(value: Any, rec: Record, field: str) -> str | None:
    """A conversation id: a non-empty string or an integer."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    rec.problem(
        field,
        "conversation id is missing" if value in (None, "") else f"bad conversation id {value!r}",
        "give every conversation a unique, non-empty id",
    )
    return None


def _no_name(canonical: str) -> str:
    return ""


class _Quiet(Record):
    """Counts problems without recording them: the first, fast attempt at a message."""

    def problem(self, field: str | None, message: str, fix: str = "") -> None:
        """Count the problem."""
        self.count += 1


_QUIET = _Quiet(ProblemLog("", limit=0), None)  # shared: a spurious count only costs the second reading


def build_message(
    obj: Any, rec: Record, path: str, mapping: FieldMapping, index: int | None = None
) -> Message | None:
    """A :class:`Message` from one log object; problems name fields under ``path`` (``path[index]`` if given).

    This runs once per message of a log, so it first reads the message without building field names; only
    a message with problems is read again to record them with their names.
    """
    if isinstance(obj, dict):
        m = mapping.rename(obj)
        message = _message(m, _QUIET, mapping, _no_name)
        if message is not None:
            return message
    where = path if index is None else f"{path}[{index}]"
    if not isinstance(obj, dict):
        rec.problem(where or None, "a message must be an object", 'use {"role": "human", "content": "..."}')
        return None
    prefix = f"{where}." if where else ""
    return _message(m, rec, mapping, lambda canonical: prefix + mapping.source(canonical))


def _message(
    m: dict[str, Any], rec: Record, mapping: FieldMapping, name: Callable[[str], str]
) -> Message | None:
    before = rec.count
    role = parse_role(m.get("role"), rec, name("role"), mapping)
    content = parse_content(m.get("content"), rec, name("content"))
    feedback = ts = latency = tokens = None
    retrieved: tuple[RetrievedChunk, ...] = ()
    if (value := m.get("feedback")) is not None:
        feedback = parse_feedback_value(value, rec, name("feedback"), mapping)
    if (value := m.get("ts")) is not None:
        ts = parse_ts(value, rec, name("ts"))
    key = "retrieved" if m.get("retrieved") is not None else "retrieved_ids"
    if (value := m.get(key)) is not None:
        retrieved = parse_retrieved(value, rec, name(key), mapping.list_separator)
    if (value := m.get("latency_ms")) is not None:
        latency = parse_number(value, rec, name("latency_ms"))
    if (value := m.get("tokens")) is not None:
        tokens = parse_tokens(value, rec, name("tokens"))
    elif m.get("tokens_in") not in (None, "") or m.get("tokens_out") not in (None, ""):
        t_in = parse_number(m.get("tokens_in"), rec, name("tokens_in"), integer=True) or 0
        t_out = parse_number(m.get("tokens_out"), rec, name("tokens_out"), integer=True) or 0
        tokens = TokenUsage(input=int(t_in), output=int(t_out))
    if rec.count > before or role is None or content is None:
        return None
    return Message(
        role=role,
        content=content,
        feedback=feedback,
        ts=ts,
        retrieved=retrieved,
        latency_ms=latency,
        tokens=tokens,
    )
