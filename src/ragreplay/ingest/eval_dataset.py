"""Read an evaluation dataset: JSONL, one row per line, every mistake reported with its line, field and fix.

A row::

    {"id": "q1", "question": "...", "answer": "...", "reference": "...",
     "contexts": [{"id": "doc#1", "text": "..."}], "retrieved": ["doc#1", "doc#7"],
     "judgments": {"doc#1": 2, "doc#3": 1}, "tags": ["hr", "lang=nl"]}

``id``, ``question`` and ``answer`` are required (``answer`` is optional when a target answers every row:
``ragreplay eval --target``, whose answer replaces the row's); ``reference`` (a string), ``contexts`` (a list of
``{id, text}``; a bare string is taken as a context whose id is its position), ``retrieved`` (chunk ids, best first;
the contexts' ids when left out), ``judgments`` (graded relevance per chunk id, whole numbers >= 0) and ``tags`` (a
list of labels or an object of ``key: value``) are optional. Blank lines are skipped. Ids must be unique. Nothing is
returned unless the whole file is right.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragreplay.core.eval import EvalContext, EvalRow, normal_tags
from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.json_text import JsonTextError, parse_json
from ragreplay.ingest.problems import LineSource, ProblemLog, Record

_FIELDS = ("id", "question", "answer", "reference", "contexts", "retrieved", "judgments", "tags")
_EXAMPLE = '{"id": "q1", "question": "...", "answer": "...", "contexts": [{"id": "doc#1", "text": "..."}]}'


def _text(record: Record, obj: Mapping[str, Any], key: str, required: bool) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            fix = f'add "{key}": "..." to the row, e.g. {_EXAMPLE}'
            if key == "answer":
                fix += ", or pass --target TARGET.yaml to have a target answer every row's question"
            record.problem(key, "is missing", fix)
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and key == "id":
        return str(value)
    if not isinstance(value, str):
        record.problem(key, f"must be a string, not {type(value).__name__}", f'write it as "{key}": "..."')
        return None
    if required and key != "answer" and not value.strip():
        record.problem(key, "is empty", f"give the row's {key}")
        return None
    return value


def _contexts(record: Record, raw: Any) -> list[EvalContext]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        record.problem("contexts", "must be a list", 'write "contexts": [{"id": "doc#1", "text": "..."}]')
        return []
    out = []
    for i, item in enumerate(raw):
        where = f"contexts[{i}]"
        if isinstance(item, str):
            out.append(EvalContext(id=str(i + 1), text=item))
            continue
        if not isinstance(item, Mapping):
            record.problem(where, "must be an object with id and text", '{"id": "doc#1", "text": "..."}')
            continue
        cid, text = item.get("id"), item.get("text")
        if isinstance(cid, int) and not isinstance(cid, bool):
            cid = str(cid)
        if not isinstance(cid, str) or not cid:
            record.problem(f"{where}.id", "is missing or not a string", 'give each context an "id": "doc#1"')
            continue
        if not isinstance(text, str):
            record.problem(
                f"{where}.text", "is missing or not a string", 'give each context its "text": "..."'
            )
            continue
        out.append(EvalContext(id=cid, text=text))
    return out


def _retrieved(record: Record, raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(
        isinstance(x, str | int) and not isinstance(x, bool) for x in raw
    ):
        record.problem("retrieved", "must be a list of chunk ids", 'write "retrieved": ["doc#1", "doc#7"]')
        return None
    return tuple(str(x) for x in raw)


def _judgments(record: Record, raw: Any) -> dict[str, int] | None:
    if raw is None:
        return None
    fix = 'write "judgments": {"doc#1": 2, "doc#3": 1} (graded relevance, whole numbers >= 0)'
    if not isinstance(raw, Mapping):
        record.problem("judgments", "must be an object of chunk id to relevance", fix)
        return None
    out = {}
    for key, grade in raw.items():
        if isinstance(grade, bool) or not isinstance(grade, int | float) or grade < 0 or int(grade) != grade:
            record.problem(f"judgments.{key}", f"must be a whole number >= 0, not {grade!r}", fix)
            continue
        out[str(key)] = int(grade)
    return out


def _tags(record: Record, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, Mapping) or (isinstance(raw, list) and all(isinstance(t, str) for t in raw)):
        return normal_tags(raw)
    if isinstance(raw, str):
        return (raw,)
    record.problem("tags", "must be a list of labels or an object", 'write "tags": ["hr", "lang=nl"]')
    return ()


def _row(record: Record, obj: Mapping[str, Any], answer_required: bool = True) -> EvalRow | None:
    unknown = [k for k in obj if k not in _FIELDS]
    if unknown:
        record.problem(
            unknown[0],
            "is not a field of an eval row",
            f"use only {', '.join(_FIELDS)} (or remove the field)",
        )
    row_id = _text(record, obj, "id", True)
    question = _text(record, obj, "question", True)
    answer = _text(record, obj, "answer", answer_required)
    if answer is None and not answer_required and record.ok:
        answer = ""
    reference = _text(record, obj, "reference", False)
    contexts = _contexts(record, obj.get("contexts"))
    retrieved = _retrieved(record, obj.get("retrieved"))
    judgments = _judgments(record, obj.get("judgments"))
    tags = _tags(record, obj.get("tags"))
    if not record.ok or row_id is None or question is None or answer is None:
        return None
    return EvalRow(
        id=row_id,
        question=question,
        answer=answer,
        reference=reference,
        contexts=tuple(contexts),
        retrieved=retrieved,
        judgments=judgments,
        tags=tags,
    )


def parse_eval_row(record: Record, obj: Mapping[str, Any]) -> EvalRow | None:
    """The eval row in ``obj``, or ``None`` with its problems recorded on ``record`` (line, field and fix)."""
    return _row(record, obj)


def json_objects(
    path: Path, problems: ProblemLog, example: str = _EXAMPLE
) -> Iterator[tuple[Record, Mapping[str, Any]]]:
    """Each non-blank line of the JSONL file at ``path`` as a JSON object with its :class:`Record`; a line that
    is not a JSON object is recorded on ``problems`` (with ``example`` as the fix) and skipped."""
    for line_no, text in LineSource(path, problems):
        if problems.stopped:
            break
        if not text.strip():
            continue
        record = Record(problems, line_no)
        try:
            obj = parse_json(text)
        except json.JSONDecodeError as exc:
            record.problem(
                None, f"is not valid JSON ({exc.msg} at column {exc.colno})", f"write each row as {example}"
            )
            continue
        except JsonTextError as exc:
            record.problem(exc.field, exc.message, exc.fix)
            continue
        if not isinstance(obj, Mapping):
            record.problem(
                None, f"is not a JSON object but {type(obj).__name__}", f"write each row as {example}"
            )
            continue
        yield record, obj


def unique_id(record: Record, row_id: str, seen: dict[str, int]) -> bool:
    """Whether ``row_id`` is new in the file (noted in ``seen``); a repeat is recorded on ``record``."""
    if row_id in seen:
        record.problem("id", f"{row_id!r} is also the id of line {seen[row_id]}", "give every row its own id")
        return False
    seen[row_id] = record.line or 0
    return True


def read_eval_dataset(path: Path, answer_required: bool = True) -> list[EvalRow]:
    """Every row of the JSONL dataset at ``path``; :class:`InputError` listing the problems otherwise. Without
    ``answer_required`` (a target answers every row) a row without ``answer`` has an empty one."""
    problems = ProblemLog(str(path))
    rows: list[EvalRow] = []
    seen: dict[str, int] = {}
    for record, obj in json_objects(path, problems):
        row = _row(record, obj, answer_required)
        if row is not None and unique_id(record, row.id, seen):
            rows.append(row)
    problems.raise_if_any()
    if not rows:
        fix = f"write one JSON object per line, e.g. {_EXAMPLE}"
        raise InputError([InputProblem(str(path), None, None, "holds no rows", fix)])
    return rows
