"""Guess a log's format from its extension and first record."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.json_records import is_document, trace_records
from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.jsonl import EMPTY_FIX
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, open_binary
from ragreplay.ingest.trace_detect import trace_format

FORMATS = ("canonical", "flat", "openai", "langfuse", "langsmith", "openinference", "otel")
_FORMAT_FIX = (
    "pass --format canonical|flat|openai|langfuse|langsmith|openinference|otel "
    "(and a field mapping if your column names differ)"
)
_OPENAI_MARKERS = ("metadata", "feedback")


def _first_line(path: Path) -> tuple[int, str]:
    with open_binary(path) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise _not_utf8(path, line_no, "is UTF-16")
            if raw.strip():
                try:
                    return line_no, raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
                except UnicodeDecodeError:
                    raise _not_utf8(path, line_no, "is not valid UTF-8") from None
    raise InputError([InputProblem(str(path), None, None, "file is empty", EMPTY_FIX)])


def _not_utf8(path: Path, line: int, what: str) -> InputError:
    fix = "save the file as UTF-8, e.g. `iconv -f utf-16 -t utf-8 in.jsonl > out.jsonl` (or -f latin1)"
    return InputError([InputProblem(str(path), line, None, what, fix)])


def _cannot_tell(path: Path, line: int | None, why: str) -> InputError:
    return InputError(
        [InputProblem(str(path), line, None, f"cannot tell the log format: {why}", _FORMAT_FIX)]
    )


def _json_format(raw: dict[str, Any], mapping: FieldMapping) -> str | None:
    obj = mapping.rename(raw)
    messages = obj.get("messages")
    if isinstance(messages, list):
        dicts = [mapping.rename(m) for m in messages if isinstance(m, dict)]
        roles = {str(m.get("role", "")).strip().lower() for m in dicts}
        if roles & {"human", "ai"}:
            return "canonical"
        openai_like = any(k in obj for k in _OPENAI_MARKERS) or any(
            isinstance(m.get("content"), list) or "tool_calls" in m for m in dicts
        )
        if "id" in obj and not openai_like:
            return "canonical"
        return "openai"
    if "conversation_id" in mapping.for_flat_rows().rename(raw):
        return "flat"
    return trace_format(raw)


def _first_item_format(value: Any) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return trace_format(value[0])
    return None


def detect_format(path: Path, mapping: FieldMapping | None = None) -> str:
    """``canonical``, ``flat`` or ``openai``, judged from the extension and the first non-blank line.

    CSV/TSV files are flat. A JSON line with ``messages`` is canonical if a role is ``human``/``ai`` or the
    object has an ``id`` and nothing OpenAI-specific (``metadata``, a top-level ``feedback`` list, content
    parts, tool calls); otherwise OpenAI. A JSON line with a conversation id column (after ``mapping``) is
    flat. Otherwise, and for a JSON array or a pretty-printed JSON document, the tracing tools' exports are
    told apart by their keys (:func:`~ragreplay.ingest.trace_detect.trace_format`).
    Raises :class:`InputError` for a missing or empty file or one no rule recognises.
    """
    path = Path(path)
    mapping = mapping or FieldMapping()
    line_no, text = _first_line(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        return "flat"
    if is_document(path):
        fmt = next((trace_format(obj) for _, obj in trace_records(path, ProblemLog(str(path)))), None)
        if fmt is None:
            raise _cannot_tell(path, line_no, "a JSON document that is no tracing tool's export")
        return fmt
    if text.lstrip().startswith(("{", "[")):
        try:
            obj = parse_json(text)
        except JsonTextError as exc:
            raise InputError([InputProblem(str(path), line_no, exc.field, exc.message, exc.fix)]) from None
        except json.JSONDecodeError as exc:
            raise _cannot_tell(path, line_no, f"the first line is not valid JSON ({exc.msg})") from None
        fmt = _json_format(obj, mapping) if isinstance(obj, dict) else _first_item_format(obj)
        if fmt is None:
            raise _cannot_tell(path, line_no, "the first object has neither 'messages' nor a conversation id")
        return fmt
    header = [mapping.for_flat_rows().canonical(h.strip()) for h in next(csv.reader([text]), [])]
    if "conversation_id" in header:
        return "flat"
    raise _cannot_tell(path, line_no, "not JSON lines, and no 'conversation_id' column in a CSV header")
