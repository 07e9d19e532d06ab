"""`ragreplay shadow feedback FILE`: import users' GOOD/BAD on live answers from an app's export."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from ragreplay.cli.common import ConfigOption, DbOption, err_console, open_store, settings_from
from ragreplay.shadow.feedback_import import (
    FeedbackFile,
    ImportCounts,
    ImportOptions,
    WriteCounts,
    parse_synonyms,
    write_feedback,
)
from ragreplay.shadow.privacy import load_redactor

STDIN_NAME = "<stdin>"


@contextmanager
def _spooled(stream: BinaryIO) -> Iterator[Path]:
    """``stream`` copied to a temporary file: the import reads its input twice (check, then write)."""
    with tempfile.TemporaryDirectory(prefix="ragreplay-feedback-") as folder:
        path = Path(folder) / "stdin.jsonl"
        with path.open("wb") as out:
            shutil.copyfileobj(stream, out)
        yield path


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds").replace("+00:00", "Z")


def summary_line(name: str, counts: ImportCounts, now: datetime, written: WriteCounts | None) -> str:
    """The one-line summary; ``written`` is ``None`` for a dry run."""
    verb = "would import" if written is None else "read"
    head = f"{verb} {counts.labels} label(s) ({counts.good} good, {counts.bad} bad) from {name}"
    if written is not None:
        head += f": {written.new} new, {written.already_stored} already imported"
    parts = [head, f"{counts.skipped} skipped (no label)"]
    if written is not None:
        parts.append(f"{written.shadowed} on requests with a shadow row")
        if written.older_than_stored:
            parts.append(
                f"{written.older_than_stored} older than the label already stored for their request (not kept)"
            )
    if counts.default_ts:
        parts.append(f"{counts.default_ts} without a ts got the import time {_iso(now)}")
    if written is None:
        parts.append("dry run: nothing written")
    return "; ".join(parts)


def feedback(
    file: Annotated[str, typer.Argument(help="JSONL or CSV of feedback; - reads JSONL from stdin")],
    id_field: Annotated[str, typer.Option(help="Field with the live request id")] = "request_id",
    feedback_field: Annotated[str, typer.Option(help="Field with the label or rating")] = "feedback",
    ts_field: Annotated[
        str, typer.Option(help="Field with the time (ISO 8601 or Unix seconds); missing: import time")
    ] = "ts",
    comment_field: Annotated[str, typer.Option(help="Field with the user's comment")] = "comment",
    synonym: Annotated[
        list[str] | None, typer.Option(help="Extra spelling SPELLING=good|bad|none (repeatable)")
    ] = None,
    rating_threshold: Annotated[
        float | None, typer.Option(help="Numeric ratings: this or above is good, below is bad")
    ] = None,
    redact: Annotated[
        str,
        typer.Option(
            help="Redaction of comments before storage: default (e-mail, phone, IBAN), none, or module:function "
            "(as for `shadow serve`)."
        ),
    ] = "default",
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Same as --redact none: keep comments as they are")
    ] = False,
    db: DbOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check and count; write nothing")] = False,
    config: ConfigOption = None,
) -> None:
    """Import live feedback (GOOD/BAD per request id) from a JSONL or CSV file. The whole file is checked
    first: a file with any bad line writes nothing. The latest label per request wins, so importing the same
    file again changes nothing."""
    options = ImportOptions(
        id_field=id_field,
        feedback_field=feedback_field,
        ts_field=ts_field,
        comment_field=comment_field,
        synonyms=parse_synonyms(synonym or []),
        rating_threshold=rating_threshold,
        redact=None if no_redact else load_redactor(redact),
    )
    if file == "-":
        with _spooled(sys.stdin.buffer) as path:
            _import(FeedbackFile(path, options, name=STDIN_NAME, kind="jsonl"), db, dry_run, config)
    else:
        _import(FeedbackFile(Path(file), options), db, dry_run, config)


def _import(source: FeedbackFile, db: str | None, dry_run: bool, config: Path | None) -> None:
    counts = source.validate()  # before the store is opened: a bad file creates and writes nothing
    written = None
    if not dry_run:
        settings = settings_from(config, db=db)
        with open_store(settings.db, create=True) as store:
            written = write_feedback(store, source.items())
    err_console.print(
        summary_line(source.name, counts, source.now, written), markup=False, highlight=False, soft_wrap=True
    )
