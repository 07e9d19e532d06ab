"""What an ingest found: conversations, messages, cases by feedback, skips by reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragreplay.core.types import Case, Conversation, Skip
from ragreplay.ingest.preview import TurnPreview


class IngestSummary(BaseModel):
    """The outcome of reading one log file.

    ``already_ingested``: the store holds this exact file already, nothing was written. ``dry_run``: the file
    was validated and counted only. ``written``: its cases are in the store now.
    """

    source_id: str
    path: str
    format: str
    conversations: int = 0
    messages: int = 0
    cases: int = 0
    cases_by_feedback: dict[str, int] = Field(default_factory=dict)
    skipped: int = 0
    skips_by_reason: dict[str, int] = Field(default_factory=dict)
    already_ingested: bool = False
    dry_run: bool = False
    written: bool = False
    #: a dry run's first turns, each value with the source field it came from
    preview: list[TurnPreview] = Field(default_factory=list)
    #: a dry run's records read and used, by kind (tracing exports; the streamed formats count their lines)
    records_read: dict[str, int] = Field(default_factory=dict)
    #: a dry run's records read and left out, by reason
    records_ignored: dict[str, int] = Field(default_factory=dict)


class Tally:
    """Running counts over the conversations of a file, with their cases and skips."""

    def __init__(self) -> None:
        self.conversations = 0
        self.messages = 0
        self.by_feedback: Counter[str] = Counter()
        self.by_reason: Counter[str] = Counter()

    def add(self, conv: Conversation, cases: Sequence[Case], skips: Sequence[Skip]) -> None:
        """Count one conversation."""
        self.conversations += 1
        self.messages += len(conv.messages)
        self.by_feedback.update(c.feedback.value for c in cases)
        self.by_reason.update(s.reason.value for s in skips)

    @property
    def cases(self) -> int:
        """Cases counted so far."""
        return sum(self.by_feedback.values())

    @property
    def skipped(self) -> int:
        """Skips counted so far."""
        return sum(self.by_reason.values())

    def key(self) -> tuple[int, int, int, int]:
        """The counts, to compare two passes over the same file."""
        return (self.conversations, self.messages, self.cases, self.skipped)

    def summary(
        self,
        source_id: str,
        path: str,
        fmt: str,
        *,
        already_ingested: bool = False,
        dry_run: bool = False,
        written: bool = False,
    ) -> IngestSummary:
        """An :class:`IngestSummary` of the counts."""
        return IngestSummary(
            source_id=source_id,
            path=path,
            format=fmt,
            conversations=self.conversations,
            messages=self.messages,
            cases=self.cases,
            cases_by_feedback=dict(sorted(self.by_feedback.items())),
            skipped=self.skipped,
            skips_by_reason=dict(sorted(self.by_reason.items())),
            already_ingested=already_ingested,
            dry_run=dry_run,
            written=written,
        )
