"""JSON records of a tracing tool's export: JSON Lines, or one pretty-printed JSON document (array or object).

A Parquet or CSV table gives one record per row (:mod:`~ragreplay.ingest.table_records`); a folder, the records
of each of its export files in turn (:mod:`~ragreplay.ingest.export_folder`).
JSON Lines stream one record per line (a line holding a list of objects yields each). A file whose first line
is not a whole JSON value (``[`` or ``{`` on its own, as ``json.dump(..., indent=2)`` writes) is one document:
it is read whole, up to :data:`MAX_DOCUMENT_BYTES`; an array's items keep the line they start on, an object is
one record on line 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragreplay.ingest.export_folder import export_files
from ragreplay.ingest.json_text import JsonTextError, lone_surrogate_at, parse_json
from ragreplay.ingest.jsonl import EMPTY_FIX, json_objects
from ragreplay.ingest.problems import ProblemLog, Record, open_binary
from ragreplay.ingest.table_records import is_table, table_records

#: The largest single (not line-delimited) JSON document read.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
#: The most records one export may hold: a trace's scores may come after it, so an importer keeps every record
#: of the file in memory until the end; past this, the file is refused with a fix instead of exhausting memory.
MAX_TRACE_RECORDS = 500_000
_PEEK_BYTES = 1 << 20
_WHITESPACE = " \t\r\n"
_LINES_FIX = "export as JSON Lines (one record per line), or split the file"


def trace_records(
    path: Path, problems: ProblemLog, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each JSON object record of ``path`` with a :class:`Record` for its line (see the module's docstring), up to
    :data:`MAX_TRACE_RECORDS`; past it, a problem and no more records."""
    records = (
        _folder_records(path, problems, progress)
        if path.is_dir()
        else _file_records(path, problems, progress)
    )
    for count, item in enumerate(records, start=1):
        if count > MAX_TRACE_RECORDS:
            problems.add(
                item[0].line,
                None,
                f"more than {MAX_TRACE_RECORDS:,} records in one export",
                "export a shorter time window per file (e.g. a week) and ingest the files one by one",
            )
            return
        yield item


def _file_records(
    path: Path, problems: ProblemLog, progress: Callable[[int], None] | None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    if is_table(path):
        return table_records(path, problems, progress)
    if is_document(path):
        return _document_records(path, problems, progress)
    return json_objects(path, problems, progress, arrays=True)


def _folder_records(
    folder: Path, problems: ProblemLog, progress: Callable[[int], None] | None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    """The records of each export file of ``folder`` in turn; the i-th file's line n is the folder's line
    ``i * PART_STRIDE + n`` (a problem names the file and its own line: :meth:`ProblemLog.begin_part`)."""
    done = 0
    try:
        for file in export_files(folder):
            offset = problems.begin_part(str(file))

            def advanced(read: int, before: int = done) -> None:
                if progress is not None:
                    progress(before + read)

            for rec, obj in _file_records(file, problems, advanced):
                rec.line = None if rec.line is None else rec.line + offset
                yield rec, obj
                if problems.stopped:
                    return
            done += file.stat().st_size
    finally:
        problems.end_parts()


def is_document(path: Path) -> bool:
    """True if ``path`` is one JSON document spread over lines, not JSON Lines."""
    with open_binary(path) as fh:
        for raw in fh:
            text = raw.removeprefix(b"\xef\xbb\xbf").strip()
            if not text:
                continue
            if not text.startswith((b"[", b"{")) or len(text) > _PEEK_BYTES:
                return False
            try:
                parse_json(text.decode("utf-8", "replace"))
            except JsonTextError:
                return False  # one whole line Python's parser chokes on: a line's problem, not a document
            except ValueError:
                return True
            return False
    return False


def _document_records(
    path: Path, problems: ProblemLog, progress: Callable[[int], None] | None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        problems.add(None, None, f"a single JSON document over {MAX_DOCUMENT_BYTES >> 20} MiB", _LINES_FIX)
        return
    with open_binary(path) as fh:
        data = fh.read()
    if progress is not None:
        progress(len(data))
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        fix = "save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 in.json > out.json`"
        problems.add(line, None, f"is not valid UTF-8 (byte 0x{data[exc.start]:02x})", fix)
        return
    start = _skip(text, 0)
    if text.startswith("{", start):
        rec = Record(problems, text.count("\n", 0, start) + 1)
        value = _decode(text, start, rec)
        if isinstance(value, dict):
            yield rec, value
        return
    yield from _array_items(text, start + 1, problems)


def _array_items(text: str, pos: int, problems: ProblemLog) -> Iterator[tuple[Record, dict[str, Any]]]:
    line, counted = 1, 0
    seen_any = False
    while not problems.stopped:
        pos = _skip(text, pos)
        if text.startswith("]", pos):
            break
        line += text.count("\n", counted, pos)
        counted = pos
        rec = Record(problems, line)
        item, pos = _decode_at(text, pos, rec)
        if item is None:
            return
        seen_any = True
        if isinstance(item, dict):
            yield rec, item
        else:
            rec.problem(
                None, f"expected a JSON object, got {type(item).__name__}", "make every item an object"
            )
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos += 1
        elif not text.startswith("]", pos):
            rec.problem(
                None, "expected ',' or ']' after an item", "check the commas between the array's items"
            )
            return
    if not seen_any and not problems.problems:
        problems.add(None, None, "the array is empty", EMPTY_FIX)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _decode(text: str, pos: int, rec: Record) -> Any:
    value, end = _decode_at(text, pos, rec)
    if value is not None and text[_skip(text, end) :]:
        rec.problem(
            None, "text after the JSON document", "keep one JSON document per file, or use JSON Lines"
        )
        return None
    return value


def _decode_at(text: str, pos: int, rec: Record) -> tuple[Any, int]:
    try:
        value, end = json.JSONDecoder().raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        rec.problems.add(line, None, f"invalid JSON: {exc.msg}", "check quotes, commas and brackets")
        rec.count += 1
        return None, pos
    except (RecursionError, ValueError):
        rec.problem(None, "JSON nested too deeply or a number too long to read", _LINES_FIX)
        return None, pos
    where = lone_surrogate_at(value) if "\\ud" in text[pos:end].lower() else None
    if where is not None:
        rec.problem(where or None, "a lone UTF-16 surrogate escape", "export the text as UTF-8")
        return None, pos
    return value, end
