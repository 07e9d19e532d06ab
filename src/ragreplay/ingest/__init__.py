"""Read feedback-labelled conversation logs, validate them whole, and store their cases in one go.

Formats: ``canonical`` (one JSON conversation per line), ``flat`` (one message per CSV/TSV/JSONL row with a
conversation id column) and ``openai`` (chat-format JSONL) stream: memory stays flat whatever the file size.
The tracing tools' exports, ``langfuse``, ``langsmith``, ``openinference`` (Phoenix) and ``otel`` (OpenTelemetry
GenAI spans), are joined by trace and session first (see docs/importers.md). A file with any problem is
reported whole (up to 20 problems) and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from ragreplay.core.extract import SHORT_HISTORY, extract_cases
from ragreplay.core.runs import SourceRecord
from ragreplay.core.types import Case, Conversation, Skip
from ragreplay.errors import ConfigError, InputError, InputProblem
from ragreplay.ingest.canonical import read_canonical
from ragreplay.ingest.detect import FORMATS, TRACE_FORMATS, detect_format
from ragreplay.ingest.export_folder import content_digest, signature, total_bytes
from ragreplay.ingest.feedback import FeedbackValueError, parse_feedback
from ragreplay.ingest.flat import read_flat
from ragreplay.ingest.langfuse import read_langfuse
from ragreplay.ingest.langsmith import read_langsmith
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.openai_chat import read_openai
from ragreplay.ingest.openinference import read_openinference
from ragreplay.ingest.otel_genai import read_otel
from ragreplay.ingest.preview import TurnPreview, turn_previews
from ragreplay.ingest.problems import ProblemLog, ProgressFn
from ragreplay.ingest.provenance import observing
from ragreplay.ingest.tally import IngestSummary, Tally

__all__ = [
    "FORMATS",
    "FeedbackValueError",
    "FieldMapping",
    "IngestSummary",
    "ProgressFn",
    "SourceStore",
    "detect_format",
    "ingest_file",
    "iter_conversations",
    "iter_file_cases",
    "parse_feedback",
    "source_id_for",
    "validate_file",
]

Reader = Callable[
    [Path, FieldMapping | None, ProblemLog | None, Callable[[int], None] | None],
    Iterator[tuple[int, Conversation]],
]
_READERS: dict[str, Reader] = {
    "canonical": read_canonical,
    "flat": read_flat,
    "openai": read_openai,
    "langfuse": read_langfuse,
    "langsmith": read_langsmith,
    "openinference": read_openinference,
    "otel": read_otel,
}


class SourceStore(Protocol):
    """The part of the store ingest writes to: its ``cases`` repository."""

    def has_source(self, source_id: str) -> bool:
        """True if a file with this id was ingested already."""
        ...

    def write_source(
        self, source: SourceRecord, items: Iterable[tuple[Conversation, Sequence[Case], Sequence[Skip]]]
    ) -> SourceRecord:
        """Write the source and all its conversations, cases and skips in one transaction."""
        ...


class IngestStore(Protocol):
    """What ingest is given: a :class:`~ragreplay.store.Store` (its ``cases`` repository), or a fake."""

    @property
    def cases(self) -> SourceStore:
        """Sources, conversations, cases and skips."""
        ...


def source_id_for(path: Path) -> str:
    """``src_`` + the first 16 hex digits of the SHA-256 of the file's bytes (of a folder's export files)."""
    return "src_" + content_digest(Path(path))[:16]


def _format(path: Path, fmt: str | None, mapping: FieldMapping) -> str:
    if fmt is None:
        return detect_format(path, mapping)
    if fmt.lower() not in FORMATS:
        raise ConfigError(f"unknown log format {fmt!r}. Fix: use one of {', '.join(FORMATS)}.")
    if path.is_dir() and fmt.lower() not in TRACE_FORMATS:
        problem = InputProblem(
            str(path),
            None,
            None,
            f"a folder is read only as a tracing tool's export, not as {fmt.lower()}",
            "pass one log file",
        )
        raise InputError([problem])
    return fmt.lower()


def _scaled(progress: ProgressFn | None, offset: int, total: int) -> Callable[[int], None] | None:
    if progress is None:
        return None
    return lambda done: progress(min(offset + done, total), total)


def iter_conversations(
    path: Path,
    fmt: str | None = None,
    mapping: FieldMapping | None = None,
    *,
    problems: ProblemLog | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Conversation]]:
    """Stream ``(line_no, Conversation)`` from ``path``; ``fmt`` ``None`` means detect it.

    Conversations with problems are not yielded; once the file is read (or 20 problems were found) an
    :class:`InputError` lists the problems, unless the caller passed its own ``problems`` log.
    ``progress`` gets the bytes read so far.
    """
    path = Path(path)
    mapping = mapping or FieldMapping()
    reader = _READERS[_format(path, fmt, mapping)]
    log = problems if problems is not None else ProblemLog(str(path))
    yield from reader(path, mapping, log, progress)
    if problems is None:
        log.raise_if_any()


def iter_file_cases(
    path: Path, fmt: str | None = None, mapping: FieldMapping | None = None
) -> Iterator[Case]:
    """Stream the cases of a log file (as :func:`iter_conversations`, then :func:`extract_cases`)."""
    for _, conv in iter_conversations(path, fmt, mapping):
        yield from extract_cases(conv)[0]


def _dry_count(
    path: Path,
    source_id: str,
    fmt: str,
    mapping: FieldMapping | None,
    progress: Callable[[int], None] | None,
    already_ingested: bool = False,
) -> IngestSummary:
    """Read the whole file, counting what it holds and keeping its first turns with where each value came from."""
    tally = Tally()
    previews: list[TurnPreview] = []
    with observing() as seen:
        for _, conv in iter_conversations(path, fmt, mapping, progress=progress):
            tally.add(conv, *extract_cases(conv, history_up_to=SHORT_HISTORY))
            if len(previews) < seen.preview_turns:
                origins = seen.origins.get(conv.id)
                previews += turn_previews(conv, origins, fmt, seen.preview_turns - len(previews))
    summary = tally.summary(str(source_id), str(path), fmt, dry_run=True, already_ingested=already_ingested)
    read = dict(seen.read) or _streamed_records(fmt, tally)
    return summary.model_copy(
        update={
            "preview": previews,
            "records_read": dict(sorted(read.items())),
            "records_ignored": dict(sorted(seen.ignored.items())),
        }
    )


def _streamed_records(fmt: str, tally: Tally) -> dict[str, int]:
    """The streamed formats read one conversation a line (canonical, openai) or one message a row (flat)."""
    if fmt in TRACE_FORMATS:
        return {}
    if fmt == "flat":
        return {"row (a message)": tally.messages}
    return {"line (a conversation)": tally.conversations} if tally.conversations else {}


def validate_file(
    path: Path,
    fmt: str | None = None,
    mapping: FieldMapping | None = None,
    progress: ProgressFn | None = None,
) -> IngestSummary:
    """Read the whole file and count what it holds (with its first turns and where each value came from: the
    summary's ``preview``, ``records_read``, ``records_ignored``); raises :class:`InputError` with all its
    problems."""
    path = Path(path)
    source_id = source_id_for(path)
    fmt = _format(path, fmt, mapping or FieldMapping())
    return _dry_count(path, source_id, fmt, mapping, _scaled(progress, 0, total_bytes(path)))


def ingest_file(
    path: Path,
    store: IngestStore | None,
    fmt: str | None = None,
    mapping: FieldMapping | None = None,
    dry_run: bool = False,
    progress: ProgressFn | None = None,
) -> IngestSummary:
    """Read ``path`` once, writing its conversations, cases and skips to ``store`` in one transaction.

    A file whose bytes were ingested before is not read again (``already_ingested``). With ``dry_run`` the
    file is only validated and counted (``store`` may be ``None``). ``progress(bytes_read, total_bytes)``
    follows the single pass. Every problem in the file is collected while reading; if there is any, or the
    file changes while it is read, :class:`InputError` is raised at the end and the transaction rolls back,
    so nothing is written.
    """
    path = Path(path)
    source_id = source_id_for(path)
    fmt = _format(path, fmt, mapping or FieldMapping())
    seen = store is not None and store.cases.has_source(source_id)
    if seen and not dry_run:
        return IngestSummary(source_id=source_id, path=str(path), format=fmt, already_ingested=True)
    before = signature(path)
    size = sum(part[1] for part in before)
    if dry_run or store is None:
        return _dry_count(path, source_id, fmt, mapping, _scaled(progress, 0, size), already_ingested=seen)

    tally = Tally()

    def items() -> Iterator[tuple[Conversation, Sequence[Case], Sequence[Skip]]]:
        for _, conv in iter_conversations(path, fmt, mapping, progress=_scaled(progress, 0, size)):
            # the store keeps each conversation's dialogue once, so the cases need not carry their history
            cases, skips = extract_cases(conv, history_up_to=SHORT_HISTORY)
            tally.add(conv, cases, skips)
            yield conv, cases, skips
        if signature(path) != before:
            # raising here makes the store roll the transaction back
            problem = InputProblem(
                str(path), None, None, "the file changed while it was being ingested", "ingest again"
            )
            raise InputError([problem])

    record = SourceRecord(id=source_id, path=str(path), format=fmt, ingested_at=datetime.now(UTC))
    store.cases.write_source(record, items())
    return tally.summary(source_id, str(path), fmt, written=True)
