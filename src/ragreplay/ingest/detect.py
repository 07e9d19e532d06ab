"""Guess a log's format from its extension and first record."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.export_folder import export_files
from ragreplay.ingest.json_records import is_document, trace_records
from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.jsonl import EMPTY_FIX
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, open_binary
from ragreplay.ingest.table_records import table_records
from ragreplay.ingest.trace_detect import trace_format

FORMATS = ("canonical", "flat", "openai", "langfuse", "langsmith", "openinference", "otel")
#: The formats of tracing tools' exports: the ones read from a folder, a Parquet file or a CSV without a
#: conversation id column.
TRACE_FORMATS = ("langfuse", "langsmith", "openinference", "otel")
#: What each format's reader expects of a record: said when no reader reads a file.
EXPECTED = {
    "canonical": "a JSON line with 'messages' whose roles are human/ai (and a conversation 'id')",
    "flat": "a CSV/TSV header or JSON line with a 'conversation_id' column (or one renamed by --mapping)",
    "openai": "a JSON line with OpenAI chat 'messages' (role user/assistant/system, content)",
    "langfuse": "a Langfuse trace ('id' with 'sessionId', 'observations', 'htmlPath'...), observation "
    "('traceId', 'startTime'), score ('dataType'), a UI trace download {'trace': ..., 'observations': ...} "
    "or an API page {'data': [...], 'meta': ...}",
    "langsmith": "a LangSmith run ('run_type', 'dotted_order') or feedback row ('key' and 'run_id')",
    "openinference": "a Phoenix/OpenInference span ('context.span_id', 'span_kind') or OTLP JSON "
    "('resourceSpans') whose spans carry 'openinference.span.kind'",
    "otel": "OTLP JSON ('resourceSpans' or 'resourceLogs') with gen_ai.* attributes or events",
}
_FORMAT_FIX = (
    "pass --format canonical|flat|openai|langfuse|langsmith|openinference|otel "
    "(and a field mapping if your column names differ); `ragreplay ingest FILE --dry-run` shows what is read"
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


def _cannot_tell(path: Path, line: int | None, why: str, keys: object = None) -> InputError:
    tried = "; ".join(f"{name}: {what}" for name, what in EXPECTED.items())
    found = f" Its keys: {', '.join(sorted(map(str, keys))[:20])}." if isinstance(keys, dict | list) else ""
    message = f"cannot tell the log format: {why}.{found} Tried every format: {tried}"
    return InputError([InputProblem(str(path), line, None, message, _FORMAT_FIX)])


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
    if path.is_dir():
        return _folder_format(path, mapping)
    if path.suffix.lower() in (".parquet", ".pq"):
        return _table_format(path, mapping)
    line_no, text = _first_line(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        return _csv_format(path, text, mapping)
    if is_document(path):
        first = next((obj for _, obj in trace_records(path, ProblemLog(str(path)))), None)
        fmt = trace_format(first)
        if fmt is None:
            raise _cannot_tell(path, line_no, "a JSON document that is no tracing tool's export", first)
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
            raise _cannot_tell(path, line_no, "no reader knows the first record", obj)
        return fmt
    header = [mapping.for_flat_rows().canonical(h.strip()) for h in next(csv.reader([text]), [])]
    if "conversation_id" in header:
        return "flat"
    raise _cannot_tell(path, line_no, "not JSON lines, and no 'conversation_id' column in a CSV header")


def _table_format(path: Path, mapping: FieldMapping) -> str:
    """A Parquet table is a tracing tool's export, told by its first row's columns."""
    log = ProblemLog(str(path))
    first = next((obj for _, obj in table_records(path, log)), None)
    log.raise_if_any()
    fmt = trace_format(first)
    if fmt is None:
        raise _cannot_tell(path, 1, "no reader knows its columns", first)
    return fmt


def _csv_format(path: Path, header_line: str, mapping: FieldMapping) -> str:
    """A CSV/TSV is flat unless its header lacks a conversation id column and its first row is a tracing
    tool's (Phoenix's spans dataframe saved as CSV); the flat reader then says what is wrong."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    header = next(csv.reader([header_line], delimiter=delimiter), [])
    if "conversation_id" in [mapping.for_flat_rows().canonical(h.strip()) for h in header]:
        return "flat"
    log = ProblemLog(str(path))
    first = next((obj for _, obj in table_records(path, log)), None)
    return trace_format(first) or "flat"


def _folder_format(folder: Path, mapping: FieldMapping) -> str:
    """A folder is one tracing tool's export: the format of its first file that tells one."""
    for file in export_files(folder):
        try:
            fmt = detect_format(file, mapping)
        except InputError:
            continue
        if fmt in TRACE_FORMATS:
            return fmt
    raise _cannot_tell(folder, None, "none of the folder's files is a tracing tool's export")
