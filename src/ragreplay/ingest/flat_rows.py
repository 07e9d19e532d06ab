"""Rows of a flat one-message-per-row log (CSV, TSV or JSONL), streamed with their physical line numbers."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragreplay.ingest.fields import parse_id, parse_number, parse_tags, stringify
from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.jsonl import EMPTY_FIX, json_objects
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import LineSource, ProblemLog, Record, open_binary

REQUIRED_COLUMNS = ("conversation_id", "role", "content")


@dataclass
class Row:
    """One message row: its line, conversation, optional turn for ordering, and canonical-named fields."""

    line: int
    conv_id: str
    turn: float | None
    fields: dict[str, Any]
    ok: bool
    tags: dict[str, str] = field(default_factory=dict)


def flat_kind(path: Path) -> str:
    """``csv``, ``tsv`` or ``jsonl``: from the extension, else from the first character of the file."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    with open_binary(path) as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return "jsonl" if head.startswith(b"{") else "csv"


def raw_rows(
    path: Path, mapping: FieldMapping, problems: ProblemLog, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each row of ``path`` as ``(line, fields with canonical names)``; a CSV row's line is its first."""
    kind = flat_kind(path)
    if kind == "jsonl":
        for rec, obj in json_objects(path, problems, progress):
            if rec.line is not None:
                yield rec.line, mapping.rename(obj)
        return
    yield from _csv_rows(path, mapping, problems, progress, "\t" if kind == "tsv" else ",")


def _csv_rows(
    path: Path,
    mapping: FieldMapping,
    problems: ProblemLog,
    progress: Callable[[int], None] | None,
    delimiter: str,
) -> Iterator[tuple[int, dict[str, Any]]]:
    texts = (text for _, text in LineSource(path, problems, progress, bad_bytes="replace"))
    reader = csv.reader(texts, delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            problems.add(None, None, "file is empty", EMPTY_FIX)
            return
        header = [mapping.canonical(h.strip()) for h in header]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        for column in missing:
            problems.add(
                1,
                mapping.source(column),
                f"column {mapping.source(column)!r} is missing (header: {', '.join(header)})",
                f"add the column, or map yours to it in the field mapping: fields: {{your_column: {column}}}",
            )
        if missing:
            return
        yield from csv_records(reader, header, problems, delimiter)
    except csv.Error as exc:
        problems.add(
            reader.line_num, None, f"cannot be read as CSV: {exc}", "check the quoting around this line"
        )


def csv_records(
    reader: Any, header: list[str], problems: ProblemLog, delimiter: str, empty_fix: str = EMPTY_FIX
) -> Iterator[tuple[int, dict[str, str]]]:
    """The non-blank records after the header of a ``csv.reader``, each with the line it starts on, as
    ``{column: cell}``. A record whose cell count is off, and a file without records, become problems; it
    stops when ``problems`` says so. ``csv.Error`` is the caller's to catch (it knows the reader)."""
    previous = reader.line_num
    n_rows = 0
    for cells in reader:
        start, previous = previous + 1, reader.line_num
        if problems.stopped:
            return
        if not any(c.strip() for c in cells):
            continue
        n_rows += 1
        if len(cells) != len(header):
            problems.add(
                start,
                None,
                f"row has {len(cells)} cells but the header has {len(header)}",
                f"quote cells that contain {delimiter!r}, quotes or line breaks",
            )
            continue
        yield start, dict(zip(header, cells, strict=True))
    if n_rows == 0:
        problems.add(None, None, "file has a header but no rows", empty_fix)


def make_row(line: int, fields: dict[str, Any], problems: ProblemLog, mapping: FieldMapping) -> Row | None:
    """A :class:`Row` with its conversation id, turn and tags read; ``None`` if it has no usable id."""
    rec = Record(problems, line)
    conv_id = parse_id(fields.get("conversation_id"), rec, mapping.source("conversation_id"))
    turn = parse_number(fields.get("turn"), rec, mapping.source("turn"))
    tags = _row_tags(fields, rec, mapping)
    if conv_id is None:
        return None
    return Row(line=line, conv_id=conv_id, turn=turn, fields=fields, ok=rec.ok, tags=tags)


def _row_tags(fields: dict[str, Any], rec: Record, mapping: FieldMapping) -> dict[str, str]:
    tags: dict[str, str] = {}
    value = fields.get("tags")
    if isinstance(value, str) and value.strip():
        try:
            value = parse_json(value)
        except JsonTextError as exc:
            rec.problem(mapping.source("tags"), exc.message, exc.fix)
            value = None
        except json.JSONDecodeError:
            rec.problem(mapping.source("tags"), "tags must be a JSON object", 'use {"department": "hr"}')
            value = None
    if value not in (None, ""):
        tags.update(parse_tags(value, rec, mapping.source("tags")))
    prefix = mapping.tag_prefix
    for key, val in fields.items():
        if prefix and key.startswith(prefix) and len(key) > len(prefix) and val not in (None, ""):
            tags[key[len(prefix) :]] = stringify(val)
    return tags
