"""Streaming JSON Lines: one object per line, with the problems every JSONL format shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.problems import LineSource, ProblemLog, Record

EMPTY_FIX = "check that this is the right file; a log needs at least one conversation"


def json_objects(
    path: Path,
    problems: ProblemLog,
    progress: Callable[[int], None] | None = None,
    *,
    arrays: bool = False,
) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each JSON object of ``path`` with a :class:`Record` for its line; blank lines are skipped.

    A line that is not JSON, or not an object, is recorded as a problem and skipped; with ``arrays`` a line
    holding a list of objects yields each of them (with the line's record). An empty file is a problem. Stops
    once ``problems`` is full.
    """
    for rec, text in json_lines(path, problems, progress):
        for obj in line_objects(rec, text, arrays=arrays):
            yield rec, obj


def json_lines(
    path: Path, problems: ProblemLog, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[Record, str]]:
    """The text of each non-blank line of ``path`` (line ending stripped) with a :class:`Record` for it.

    An empty file is a problem. Stops once ``problems`` is full.
    """
    seen_any = False
    for line_no, text in LineSource(path, problems, progress):
        if problems.stopped:
            return
        if not text.strip():
            continue
        seen_any = True
        yield Record(problems, line_no), text.rstrip("\r\n")
    if not seen_any and not problems.problems:
        problems.add(None, None, "file is empty", EMPTY_FIX)


def line_objects(rec: Record, text: str, *, arrays: bool = False) -> list[dict[str, Any]]:
    """The JSON object on one line (with ``arrays``, the objects of a list of them); a line that is not JSON,
    or not an object, is recorded as a problem on ``rec`` and gives none."""
    try:
        obj = parse_json(text)
    except JsonTextError as exc:
        rec.problem(exc.field, exc.message, exc.fix)
        return []
    except json.JSONDecodeError as exc:
        where = "the line ends too early" if exc.pos >= len(text.rstrip()) else f"at column {exc.pos + 1}"
        rec.problem(
            None,
            f"invalid JSON: {exc.msg} ({where})",
            "each line must be one complete JSON object; check quotes, commas and brackets",
        )
        return []
    if arrays and isinstance(obj, list) and all(isinstance(item, dict) for item in obj):
        return obj
    if not isinstance(obj, dict):
        rec.problem(
            None, f"expected a JSON object, got {type(obj).__name__}", "put one {...} object per line"
        )
        return []
    return [obj]


class IdRegistry:
    """Conversation ids seen so far in a file, to report duplicates with the line of the first one.

    Memory grows with the number of conversations (ids only), not with the size of the file.
    """

    def __init__(self) -> None:
        self._lines: dict[str, int | None] = {}

    def check(self, conv_id: str, rec: Record, field: str) -> None:
        """Record ``conv_id``; a repeat is a problem on ``rec``."""
        first = self._lines.get(conv_id, -1)
        if first != -1:
            where = f"line {first}" if first is not None else "an earlier line"
            rec.problem(
                field,
                f"duplicate conversation id {conv_id!r} (first used on {where})",
                "give each conversation a unique id, or remove the repeated line",
            )
        else:
            self._lines[conv_id] = rec.line
