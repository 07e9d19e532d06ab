"""Rows of a tabular export (Parquet or CSV) as dict records, as the JSON readers give them.

LangSmith's bulk export writes Parquet; Phoenix's spans dataframe is saved as Parquet or CSV. Each row becomes one
record whose :class:`Record` line is, for CSV, the line the row starts on (the header is line 1) and, for
Parquet, the row's number from 1. Values are made JSON-like: timestamps become ISO 8601 text, 16-byte binary ids
become UUID text, other bytes hex; a CSV cell left empty is ``None``, and a cell holding a JSON (or, as pandas'
``to_csv`` writes nested values, a Python literal) list or object is read as one. Parquet needs the
``[parquet]`` extra (pyarrow).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

from ragreplay.errors import import_extra
from ragreplay.ingest.jsonl import EMPTY_FIX
from ragreplay.ingest.problems import ProblemLog, Record, open_binary

#: Suffixes read as tables.
TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv")
#: The longest CSV cell read (a span's input can be large); csv's own default is 128 KiB.
MAX_CELL_CHARS = 16 * 1024 * 1024
#: The longest nested value parsed out of a CSV cell.
MAX_NESTED_CELL_CHARS = 1024 * 1024
_BATCH_ROWS = 1024


def is_table(path: Path) -> bool:
    """True if ``path`` is read as a table (by its suffix)."""
    return path.suffix.lower() in TABLE_SUFFIXES


def table_records(
    path: Path, problems: ProblemLog, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each row of the Parquet or CSV/TSV file ``path`` as a record (see the module's docstring)."""
    suffix = path.suffix.lower()
    rows = _parquet_rows(path, problems) if suffix in (".parquet", ".pq") else _csv_rows(path, problems)
    seen_any = False
    for rec, row in rows:
        seen_any = True
        yield rec, row
        if problems.stopped:
            return
    if progress is not None:
        progress(path.stat().st_size)
    if not seen_any and not problems.problems:
        problems.add(None, None, "the table has no rows", EMPTY_FIX)


def _parquet_rows(path: Path, problems: ProblemLog) -> Iterator[tuple[Record, dict[str, Any]]]:
    parquet = import_extra("pyarrow.parquet", "reading Parquet exports")
    try:
        table = parquet.ParquetFile(path)
    except OSError as exc:
        fix = "export the table again, or save it as CSV or JSON Lines"
        problems.add(None, None, f"not a readable Parquet file ({exc})", fix)
        return
    row = 0
    for batch in table.iter_batches(batch_size=_BATCH_ROWS):
        for values in batch.to_pylist():
            row += 1
            yield Record(problems, row), {str(k): plain(v) for k, v in values.items()}


def plain(value: Any) -> Any:
    """A Parquet value as JSON would hold it: ISO text for times, UUID text for 16-byte ids, hex for bytes."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a Parquet map's pairs
            return {str(k): plain(v) for k, v in value}
        return [plain(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return str(uuid.UUID(bytes=value)) if len(value) == 16 else value.hex()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _csv_rows(path: Path, problems: ProblemLog) -> Iterator[tuple[Record, dict[str, Any]]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(min(MAX_CELL_CHARS, sys.maxsize))
    try:
        with open_binary(path) as fh:
            text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="strict", newline="")
            delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
            reader = csv.DictReader(text, delimiter=delimiter)
            start = 2
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except UnicodeDecodeError:
                    fix = "save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 in.csv > out.csv`"
                    problems.add(start, None, "is not valid UTF-8", fix)
                    return
                except csv.Error as exc:
                    problems.add(start, None, f"not a readable CSV row ({exc})", "check the quoting")
                    return
                yield Record(problems, start), {str(k): _cell(v) for k, v in row.items() if k is not None}
                start = reader.line_num + 1
    finally:
        csv.field_size_limit(limit)


def _cell(value: str | list[str] | None) -> Any:
    if value is None or isinstance(value, list):
        return value
    if value == "":
        return None
    stripped = value.strip()
    if stripped[:1] in ("[", "{") and len(stripped) <= MAX_NESTED_CELL_CHARS:
        try:
            return json.loads(stripped)
        except ValueError:
            pass
        try:
            return plain(ast.literal_eval(stripped))  # pandas' to_csv writes nested values as Python literals
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value
