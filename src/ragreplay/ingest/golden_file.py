"""Read a golden set file: JSONL in the eval dataset's format, or CSV with the same fields as columns.

A row: ``id`` and ``question`` (required), ``reference`` (the correct answer), ``contexts`` (the chunks that
hold it, ``[{"id", "text"}]``), ``judgments`` (graded relevance per chunk id), ``tags`` and ``history`` (earlier
turns ``[{"role": "human"|"ai", "content"}]`` a follow-up needs). An eval row's ``answer`` and ``retrieved``
(the answer under test) are accepted and left out, and counted. In CSV, ``contexts``, ``judgments`` and
``history`` cells hold that JSON; ``tags`` holds ``a|b|key=value`` or a JSON list; an empty cell is no value.

Every mistake is reported as ``file:line: field ... Fix: ...`` (up to 20, then a count) and nothing is
returned unless the whole file is right.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragreplay.core.golden import GoldenRow
from ragreplay.core.review import HistoryTurn
from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.eval_dataset import json_objects, parse_eval_row, unique_id
from ragreplay.ingest.problems import LineSource, ProblemLog, Record

GOLDEN_FIELDS = ("id", "question", "reference", "contexts", "judgments", "tags", "history")
UNDER_TEST = ("answer", "retrieved")
"""Eval-row fields that belong to the answer under test: accepted on import, not kept."""
JSON_CELLS = ("contexts", "judgments", "history")
MAX_ROWS = 100_000
"""The most rows one file may hold (a golden set is curated: far fewer in practice)."""
MAX_CELL = 1_000_000
"""The most characters one CSV cell may hold."""
_EXAMPLE = '{"id": "q1", "question": "...", "reference": "...", "contexts": [{"id": "doc#1", "text": "..."}]}'
_ROLES = ("human", "ai")


@dataclass(frozen=True)
class GoldenFile:
    """What a file held: its rows, and how many rows gave fields of the answer under test (left out)."""

    rows: list[GoldenRow]
    dropped_under_test: int = 0


def _history(record: Record, raw: Any) -> tuple[HistoryTurn, ...]:
    if raw is None:
        return ()
    fix = 'write "history": [{"role": "human", "content": "..."}, {"role": "ai", "content": "..."}]'
    if not isinstance(raw, list):
        record.problem("history", "must be a list of turns", fix)
        return ()
    turns = []
    for i, turn in enumerate(raw):
        role = turn.get("role") if isinstance(turn, Mapping) else None
        content = turn.get("content") if isinstance(turn, Mapping) else None
        if role not in _ROLES or not isinstance(content, str) or set(turn) - {"role", "content"}:
            record.problem(f"history[{i}]", "must be {role: human|ai, content: text}", fix)
            continue
        turns.append(HistoryTurn(role=role, content=content))
    return tuple(turns)


def golden_row(record: Record, obj: Mapping[str, Any]) -> tuple[GoldenRow | None, bool]:
    """The golden row in ``obj`` (``None`` with its problems recorded) and whether it gave fields of the answer
    under test (left out)."""
    unknown = [k for k in obj if k not in GOLDEN_FIELDS and k not in UNDER_TEST]
    if unknown:
        fields = ", ".join(GOLDEN_FIELDS)
        record.problem(unknown[0], "is not a field of a golden row", f"use only {fields} (or remove it)")
    history = _history(record, obj.get("history"))
    eval_part = {k: v for k, v in obj.items() if k in GOLDEN_FIELDS and k != "history"}
    row = parse_eval_row(record, {**eval_part, "answer": ""})
    if row is None or not record.ok:
        return None, False
    golden = GoldenRow(
        id=row.id,
        question=row.question,
        reference=row.reference,
        contexts=row.contexts,
        judgments=row.judgments,
        tags=row.tags,
        history=history,
    )
    return golden, any(k in obj for k in UNDER_TEST)


def _csv_objects(path: Path, problems: ProblemLog) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each CSV record as an object of its non-empty cells, JSON cells parsed, with its starting line."""
    csv.field_size_limit(MAX_CELL)
    reader = csv.reader(text for _, text in LineSource(path, problems, bad_bytes="replace"))
    try:
        header = next(reader, None)
        if header is None:
            return
        header = [h.strip() for h in header]
        head = Record(problems, 1)
        for name in header:
            if name not in GOLDEN_FIELDS and name not in UNDER_TEST:
                head.problem(name, "is not a column of a golden set", f"use only {', '.join(GOLDEN_FIELDS)}")
        for needed in ("id", "question"):
            if needed not in header:
                head.problem(needed, "column is missing", f"add a '{needed}' column to the header line")
        if not head.ok:
            return
        start = reader.line_num + 1
        for cells in reader:
            record, start = Record(problems, start), reader.line_num + 1
            if problems.stopped:
                return
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                record.problem(
                    None, f"has {len(cells)} cells, the header {len(header)}", "quote cells holding commas"
                )
                continue
            yield record, _cells(record, dict(zip(header, cells, strict=True)))
    except csv.Error as exc:
        problems.add(
            reader.line_num, None, f"is not valid CSV ({exc})", f"cells of at most {MAX_CELL} characters"
        )


def _cells(record: Record, raw: dict[str, str]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, cell in raw.items():
        if not cell.strip():
            continue
        if name in JSON_CELLS or (name == "tags" and cell.lstrip().startswith("[")):
            try:
                obj[name] = json.loads(cell)
            except json.JSONDecodeError as exc:
                record.problem(
                    name, f"is not valid JSON ({exc.msg})", f"write the cell as JSON, e.g. {_EXAMPLE}"
                )
            continue
        obj[name] = [t.strip() for t in cell.split("|") if t.strip()] if name == "tags" else cell
    return obj


def read_golden_file(path: Path) -> GoldenFile:
    """Every row of the golden file at ``path`` (``.csv``: CSV, anything else: JSONL); :class:`InputError`
    listing the problems otherwise."""
    problems = ProblemLog(str(path))
    objects = (
        _csv_objects(path, problems)
        if path.suffix.lower() == ".csv"
        else json_objects(path, problems, _EXAMPLE)
    )
    rows: list[GoldenRow] = []
    seen: dict[str, int] = {}
    dropped = 0
    for record, obj in objects:
        row, under_test = golden_row(record, obj)
        if row is None or not unique_id(record, row.id, seen):
            continue
        if len(rows) == MAX_ROWS:
            record.problem(None, f"is past the limit of {MAX_ROWS} rows", "split the file into several sets")
            break
        rows.append(row)
        dropped += under_test
    problems.raise_if_any()
    if not rows:
        fix = f"write one row per line, e.g. {_EXAMPLE}, or a CSV with an id,question,reference header"
        raise InputError([InputProblem(str(path), None, None, "holds no rows", fix)])
    return GoldenFile(rows, dropped)
