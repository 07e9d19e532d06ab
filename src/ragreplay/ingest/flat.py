"""Reader for flat logs: one message per row (CSV, TSV or JSONL) with a conversation id column.

Rows of a conversation may be contiguous or scattered through the file. A first quick pass over the ids
tells which. Contiguous files are grouped on the fly, holding one conversation at a time. Scattered files are
spooled into a temporary SQLite file, indexed by conversation, and read back one conversation at a time
(conversations in order of their first row), so memory stays bounded either way; the temporary file is
deleted when reading ends.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Literal

from ragreplay.core.types import Conversation, Message
from ragreplay.ingest.fields import build_message
from ragreplay.ingest.flat_rows import Row, make_row, raw_rows
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record

Grouping = Literal["auto", "contiguous", "spool"]
_BATCH = 1000


class _Discard(ProblemLog):
    """A problem log that keeps nothing: the id pre-scan leaves reporting to the real pass."""

    def add(self, line: int | None, field: str | None, message: str, fix: str = "") -> None:
        """Ignore the problem."""


def read_flat(
    path: Path,
    mapping: FieldMapping | None = None,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
    grouping: Grouping = "auto",
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(line_no of the conversation's first row, Conversation)`` from a flat log.

    Default columns: ``conversation_id``, ``role``, ``content``, and optionally ``feedback``, ``ts``,
    ``user_id``, ``turn`` (orders the rows of a conversation when every row has one), ``retrieved_ids`` (JSON
    list or ``a;b``), ``latency_ms``, ``tokens_in``, ``tokens_out``, ``tags`` (JSON object) and
    ``tag_<name>`` columns. Rename columns with a :class:`FieldMapping`. ``grouping`` forces a strategy
    (``contiguous`` trusts the file, ``spool`` always uses SQLite); ``auto`` checks first.
    Problems are handled as in :func:`~ragreplay.ingest.canonical.read_canonical`.
    """
    mapping = (mapping or FieldMapping()).for_flat_rows()
    log = problems if problems is not None else ProblemLog(str(path))
    if grouping == "auto":
        grouping = "contiguous" if is_contiguous(path, mapping) else "spool"
    rows = _rows(path, mapping, log, progress)
    groups = _contiguous_groups(rows) if grouping == "contiguous" else _spooled_groups(rows)
    for group in groups:
        conv = conversation_from_rows(group, log, mapping)
        if conv is not None:
            yield group[0].line, conv
        if log.stopped:
            break
    if problems is None:
        log.raise_if_any()


def is_contiguous(path: Path, mapping: FieldMapping) -> bool:
    """True if all rows of each conversation sit together in ``path`` (one streaming pass over the ids)."""
    seen: set[str] = set()
    last: object = None
    for _, fields in raw_rows(path, mapping, _Discard(str(path))):
        conv_id = fields.get("conversation_id")
        if conv_id != last:
            key = str(conv_id)
            if key in seen:
                return False
            seen.add(key)
            last = conv_id
    return True


def _rows(
    path: Path, mapping: FieldMapping, log: ProblemLog, progress: Callable[[int], None] | None
) -> Iterator[Row]:
    for line, fields in raw_rows(path, mapping, log, progress):
        row = make_row(line, fields, log, mapping)
        if row is not None:
            yield row


def _contiguous_groups(rows: Iterable[Row]) -> Iterator[list[Row]]:
    group: list[Row] = []
    for row in rows:
        if group and row.conv_id != group[0].conv_id:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def _spooled_groups(rows: Iterable[Row]) -> Iterator[list[Row]]:
    with tempfile.TemporaryDirectory(prefix="ragreplay-ingest-") as tmp:
        db = sqlite3.connect(Path(tmp) / "rows.sqlite")
        try:
            for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=FILE", "cache_size=-16000"):
                db.execute(f"PRAGMA {pragma}")
            db.execute("CREATE TABLE convs (conv TEXT PRIMARY KEY, first_line INTEGER NOT NULL)")
            db.execute(
                "CREATE TABLE rows (conv TEXT, turn REAL, line INTEGER, ok INTEGER, fields TEXT, tags TEXT)"
            )
            batch: list[tuple[object, ...]] = []
            for row in rows:
                db.execute("INSERT OR IGNORE INTO convs VALUES (?, ?)", (row.conv_id, row.line))
                batch.append(
                    (row.conv_id, row.turn, row.line, row.ok, json.dumps(row.fields), json.dumps(row.tags))
                )
                if len(batch) >= _BATCH:
                    db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?)", batch)
                    batch.clear()
            db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?)", batch)
            db.execute("CREATE INDEX rows_by_conv ON rows (conv, line)")
            db.execute("CREATE INDEX convs_by_line ON convs (first_line)")
            cursor = db.execute(
                "SELECT r.conv, r.turn, r.line, r.ok, r.fields, r.tags"
                " FROM convs c JOIN rows r ON r.conv = c.conv ORDER BY c.first_line, r.line"
            )
            spooled = (
                Row(
                    line=line,
                    conv_id=conv,
                    turn=turn,
                    fields=json.loads(fields),
                    ok=bool(ok),
                    tags=json.loads(tags),
                )
                for conv, turn, line, ok, fields, tags in cursor
            )
            yield from _contiguous_groups(spooled)
        finally:
            db.close()


def conversation_from_rows(rows: list[Row], log: ProblemLog, mapping: FieldMapping) -> Conversation | None:
    """One conversation from its rows (all with the same id), or ``None`` after recording problems."""
    ok = all(row.ok for row in rows)
    turns = [row.turn for row in rows]
    if all(t is not None for t in turns):
        first_line: dict[float, int] = {}
        for row in rows:
            assert row.turn is not None
            if row.turn in first_line:
                Record(log, row.line).problem(
                    mapping.source("turn"),
                    f"turn {row.turn:g} of conversation {row.conv_id!r} repeats line {first_line[row.turn]}",
                    "give each message of a conversation its own turn number",
                )
                ok = False
            first_line.setdefault(row.turn, row.line)
        rows = sorted(rows, key=lambda r: (r.turn, r.line))
    messages: list[Message] = []
    for row in rows:
        message = build_message(row.fields, Record(log, row.line), "", mapping)
        if message is None:
            ok = False
        else:
            messages.append(message)
    if not ok:
        return None
    user_id = next(
        (str(r.fields["user_id"]) for r in rows if r.fields.get("user_id") not in (None, "")), None
    )
    tags: dict[str, str] = {}
    for row in rows:
        for key, value in row.tags.items():
            tags.setdefault(key, value)
    return Conversation(id=rows[0].conv_id, messages=tuple(messages), user_id=user_id, tags=tags)
