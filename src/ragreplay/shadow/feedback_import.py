"""Live feedback exported by an app (JSONL or CSV) read into :class:`ShadowFeedback` items, checked first.

:class:`FeedbackFile` reads a file as a stream twice: :meth:`FeedbackFile.validate` collects every problem
(the first :data:`~ragreplay.ingest.problems.MAX_PROBLEMS` in detail) and the counts, and
:meth:`FeedbackFile.items` yields the items of a file that passed. :func:`write_feedback` stores them in
batches, so memory stays flat whatever the file size. A file with any problem writes nothing.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragreplay.core.reply_shapes import get_path
from ragreplay.core.shadow import ShadowFeedback
from ragreplay.core.types import Feedback
from ragreplay.errors import ConfigError
from ragreplay.ingest.feedback import FeedbackValueError, parse_feedback
from ragreplay.ingest.fields import parse_ts
from ragreplay.ingest.flat_rows import csv_records, flat_kind
from ragreplay.ingest.problems import LineSource, ProblemLog, Record
from ragreplay.shadow.privacy import Redactor, default_redactor
from ragreplay.store import Store

#: Labels written per store call (each call is one transaction).
BATCH = 1000

_MISSING: Any = object()
_ARRAY_FIX = "write one JSON object per line (JSON Lines), e.g. `jq -c '.[]' in.json > out.jsonl`"
_JSON_FIX = "each line must be one complete JSON object; check quotes, commas and brackets"
_EMPTY_FIX = "check that this is the right file; it needs at least one line of feedback"
_SYNONYM_MEANINGS: dict[str, Feedback | None] = {
    "good": Feedback.GOOD,
    "bad": Feedback.BAD,
    "none": None,
    "null": None,
}

Getter = Callable[[str], Any]
"""Reads one field of a line by name; returns ``_MISSING`` when the line lacks it."""


def parse_synonyms(values: Iterable[str]) -> dict[str, Feedback | None]:
    """``["meh=bad", "n/a=none"]`` -> ``{"meh": BAD, "n/a": None}``; :class:`ConfigError` on a bad one."""
    out: dict[str, Feedback | None] = {}
    for value in values:
        spelling, sep, meaning = value.rpartition("=")
        key = meaning.strip().lower()
        if not sep or not spelling.strip() or key not in _SYNONYM_MEANINGS:
            raise ConfigError(
                f"--synonym {value!r}: expected SPELLING=good|bad|none. "
                "Fix: e.g. --synonym meh=bad (none: the value means no feedback)."
            )
        out[spelling.strip()] = _SYNONYM_MEANINGS[key]
    return out


@dataclass(frozen=True)
class ImportOptions:
    """Where the fields are and how labels are read.

    Field names are column names in CSV; in JSONL a name is first looked up as a key, then as a dotted path
    (``meta.request_id``, ``events.0.label``). ``redact`` is applied to comments; ``None`` keeps them as is.
    """

    id_field: str = "request_id"
    feedback_field: str = "feedback"
    ts_field: str = "ts"
    comment_field: str = "comment"
    synonyms: Mapping[str, Feedback | None] = field(default_factory=dict)
    rating_threshold: float | None = None
    redact: Redactor | None = default_redactor


@dataclass
class ImportCounts:
    """What a file holds: labels by kind, lines without a label, labels that got the import time."""

    good: int = 0
    bad: int = 0
    skipped: int = 0
    default_ts: int = 0

    @property
    def labels(self) -> int:
        """Lines with a label (good + bad)."""
        return self.good + self.bad

    def add(self, item: ShadowFeedback | None, had_ts: bool) -> None:
        """Count one line: its item, or ``None`` for a line without a label."""
        if item is None:
            self.skipped += 1
            return
        if item.feedback == Feedback.GOOD:
            self.good += 1
        else:
            self.bad += 1
        if not had_ts:
            self.default_ts += 1


@dataclass
class WriteCounts:
    """What writing did: labels sent to the store, how many rate a request with a shadow row, how many were
    older than the label the store already held for their request (that one was kept), and how many the store
    held already, the same label at the same time (imported before)."""

    written: int = 0
    shadowed: int = 0
    older_than_stored: int = 0
    already_stored: int = 0

    @property
    def new(self) -> int:
        """Labels that changed the store: written, neither held already nor older than the stored one."""
        return self.written - self.already_stored - self.older_than_stored


class FeedbackFile:
    """One feedback file: JSONL (one object per line) or CSV/TSV (a header row), by extension or content.

    ``name`` is how problems name the file (the path by default, ``<stdin>`` for spooled input). ``now`` is
    the ``ts`` of every label whose line has none: one instant for the whole import.
    """

    def __init__(
        self,
        path: Path,
        options: ImportOptions | None = None,
        *,
        name: str | None = None,
        kind: str | None = None,
        now: datetime | None = None,
    ) -> None:
        self.path = path
        self.options = options or ImportOptions()
        self.name = name if name is not None else str(path)
        self.kind = kind
        self.now = now if now is not None else datetime.now(UTC)

    def validate(self) -> ImportCounts:
        """Read the whole file and count it; raise :class:`InputError` listing its problems if it has any."""
        problems = ProblemLog(self.name)
        counts = ImportCounts()
        for item, had_ts in self._read(problems):
            counts.add(item, had_ts)
        problems.raise_if_any()
        return counts

    def items(self) -> Iterator[ShadowFeedback]:
        """The labels of a file that passed :meth:`validate`, in file order.

        Raises :class:`InputError` should a problem turn up anyway (the file changed in between).
        """
        problems = ProblemLog(self.name)
        for item, _ in self._read(problems):
            problems.raise_if_any()
            if item is not None:
                yield item
        problems.raise_if_any()

    def _kind(self) -> str:
        return self.kind or flat_kind(self.path)

    def _read(self, problems: ProblemLog) -> Iterator[tuple[ShadowFeedback | None, bool]]:
        """``(item or None for no label, whether the line had a ts)`` per line read without a problem."""
        lines = self._csv(problems) if self._kind() in ("csv", "tsv") else self._jsonl(problems)
        feedback_seen = False
        any_line = False
        for rec, get in lines:
            any_line = True
            raw = get(self.options.feedback_field)
            if raw is _MISSING:
                raw = None
            else:
                feedback_seen = True
            item, had_ts = self._line(rec, get, raw)
            if rec.ok:
                yield item, had_ts
        if any_line and not feedback_seen and not problems.stopped:
            problems.add(
                None,
                self.options.feedback_field,
                "no line has this field",
                "name the field that holds the label with --feedback-field NAME "
                "(in JSONL a dotted path such as event.rating works)",
            )

    def _line(self, rec: Record, get: Getter, raw: Any) -> tuple[ShadowFeedback | None, bool]:
        options = self.options
        label = self._label(raw, rec)
        if label is None and rec.ok:
            return None, True  # no label on this line: a counted skip, its other fields are not read
        request_id = _request_id(get(options.id_field), rec, options.id_field)
        ts_value = get(options.ts_field)
        had_ts = ts_value is not _MISSING and not (
            ts_value is None or (isinstance(ts_value, str) and not ts_value.strip())
        )
        ts = _timestamp(ts_value, rec, options.ts_field) if had_ts else self.now
        comment = _comment(get(options.comment_field), rec, options.comment_field, options.redact)
        if label is None or request_id is None or ts is None or not rec.ok:
            return None, had_ts
        return ShadowFeedback(
            request_id=request_id, feedback=label, ts=ts, comment=comment, source="import"
        ), had_ts

    def _label(self, raw: Any, rec: Record) -> Feedback | None:
        threshold = self.options.rating_threshold
        try:
            return parse_feedback(raw, synonyms=self.options.synonyms, rating_threshold=threshold)
        except FeedbackValueError:
            pass
        synonym = f"add your spelling with --synonym {_spelling(raw)}=bad (or =good, =none)"
        if threshold is not None:
            fix = f"ratings are numbers (>= {threshold:g} is good); {synonym}"
        elif _is_number(raw):
            fix = (
                "for ratings pass --rating-threshold N (ratings >= N are good, e.g. 4 for 1..5); "
                "without it only 1 (good), 0 and -1 (bad) are labels"
            )
        else:
            fix = (
                f"use good/bad, up/down, thumbs_up/thumbs_down, like/dislike, 1/0 or true/false, or {synonym}"
            )
        rec.problem(self.options.feedback_field, f"value {_show(raw)} is not a feedback label", fix)
        return None

    def _jsonl(self, problems: ProblemLog) -> Iterator[tuple[Record, Getter]]:
        seen_any = False
        for line_no, text in LineSource(self.path, problems):
            if problems.stopped:
                return
            if not text.strip():
                continue
            rec = Record(problems, line_no)
            text = text.rstrip("\r\n")
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                first_array = not seen_any and text.lstrip().startswith("[")
                fix = _ARRAY_FIX if first_array else _JSON_FIX
                seen_any = True
                rec.problem(None, f"invalid JSON: {exc.msg} (at column {exc.pos + 1})", fix)
                continue
            seen_any = True
            if not isinstance(obj, dict):
                fix = _ARRAY_FIX if isinstance(obj, list) else "put one {...} object per line"
                rec.problem(None, f"expected a JSON object, got {type(obj).__name__}", fix)
                continue
            yield rec, _json_getter(obj)
        if not seen_any and not problems.problems:
            problems.add(None, None, "file is empty", _EMPTY_FIX)

    def _csv(self, problems: ProblemLog) -> Iterator[tuple[Record, Getter]]:
        delimiter = "\t" if self._kind() == "tsv" else ","
        texts = (text for _, text in LineSource(self.path, problems, bad_bytes="replace"))
        reader = csv.reader(texts, delimiter=delimiter)
        try:
            header = next(reader, None)
            if header is None or not any(h.strip() for h in header):
                problems.add(None, None, "file is empty", _EMPTY_FIX)
                return
            header = [h.strip() for h in header]
            if not self._header_ok(header, problems):
                return
            for start, cells in csv_records(reader, header, problems, delimiter, _EMPTY_FIX):
                yield Record(problems, start), _row_getter(cells)
        except csv.Error as exc:
            problems.add(
                reader.line_num, None, f"cannot be read as CSV: {exc}", "check the quoting around this line"
            )

    def _header_ok(self, header: Sequence[str], problems: ProblemLog) -> bool:
        ok = True
        for name, flag in (
            (self.options.id_field, "--id-field"),
            (self.options.feedback_field, "--feedback-field"),
        ):
            if name not in header:
                problems.add(
                    1,
                    name,
                    f"column is missing (header: {', '.join(header)})",
                    f"add the column, or name yours with {flag} COLUMN",
                )
                ok = False
        return ok


def _json_getter(obj: dict[str, Any]) -> Getter:
    def get(name: str) -> Any:
        if name in obj:
            return obj[name]
        if "." not in name:
            return _MISSING
        try:
            return get_path(obj, name)
        except KeyError:
            return _MISSING

    return get


def _row_getter(row: dict[str, str]) -> Getter:
    def get(name: str) -> Any:
        return row.get(name, _MISSING)

    return get


def _is_number(value: Any) -> bool:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _spelling(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if text and all(c.isalnum() or c in "_-" for c in text) else "'YOURS'"


def _request_id(value: Any, rec: Record, name: str) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if value is _MISSING or value is None or value == "":
        message = "is missing"
    else:
        message = f"value {_show(value)} is not a request id (text or a whole number)"
    rec.problem(
        name,
        message,
        "give every labelled line the id of the request it rates (the request id the shadow logged); "
        "if it is under another name pass --id-field NAME (in JSONL a dotted path such as meta.request_id "
        "works)",
    )
    return None


def _timestamp(value: Any, rec: Record, name: str) -> datetime | None:
    quiet = Record(ProblemLog("", limit=0), None)
    ts = parse_ts(value, quiet, name)
    if ts is None or not quiet.ok:
        rec.problem(
            name,
            f"value {_show(value)} is not a timestamp",
            "use ISO 8601 such as 2026-10-01T09:14:00Z (no zone means UTC) or Unix seconds; "
            "leave it empty to use the import time",
        )
        return None
    return ts


def _comment(value: Any, rec: Record, name: str, redact: Redactor | None) -> str | None:
    if value is _MISSING or value is None or value == "":
        return None
    if not isinstance(value, str):
        rec.problem(name, f"value {_show(value)} is not text", "use a string, or leave the comment empty")
        return None
    return redact(value) if redact is not None else value


def _same_label(stored: ShadowFeedback | None, item: ShadowFeedback) -> bool:
    return stored is not None and (stored.feedback, stored.ts, stored.comment) == (
        item.feedback,
        item.ts,
        item.comment,
    )


def write_feedback(store: Store, items: Iterable[ShadowFeedback], batch: int = BATCH) -> WriteCounts:
    """Store ``items`` in batches of ``batch`` (one transaction each) and count what happened.

    The store keeps the latest label per request, so writing the same file again changes nothing.
    """
    counts = WriteCounts()
    pending: list[ShadowFeedback] = []

    def flush() -> None:
        ids = [item.request_id for item in pending]
        stored = store.shadow_feedback.shadow_feedback_for(ids)
        shadowed = store.shadow_rows.shadowed_request_ids(ids)
        store.shadow_feedback.write_shadow_feedback(pending)
        counts.written += len(pending)
        counts.shadowed += sum(item.request_id in shadowed for item in pending)
        counts.older_than_stored += sum(
            item.request_id in stored and stored[item.request_id].ts > item.ts for item in pending
        )
        counts.already_stored += sum(_same_label(stored.get(item.request_id), item) for item in pending)
        pending.clear()

    for item in items:
        pending.append(item)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return counts
