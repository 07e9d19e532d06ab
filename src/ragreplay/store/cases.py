"""Ingested sources and what came out of them: conversations, cases and skipped messages."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Row, func, select, tuple_, update

from ragreplay.core.runs import SourceRecord
from ragreplay.core.types import Case, Conversation, Skip, SkipReason
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked, unique_by_prefix
from ragreplay.store.schema import cases, conversations, skips, sources, to_json


class _IngestBatch:
    """Rows waiting to be written, deduplicated the way each table resolves conflicts."""

    def __init__(self, source_id: str) -> None:
        self.source_id = source_id
        self.conversations: dict[str, dict[str, Any]] = {}
        self.cases: dict[str, dict[str, Any]] = {}
        self.skips: dict[tuple[str, int], dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.conversations) + len(self.cases) + len(self.skips)

    def add(self, conversation: Conversation, new_cases: Sequence[Case], new_skips: Sequence[Skip]) -> None:
        """Queue one conversation with its cases and skips."""
        # A conversation seen twice keeps its last version; a case its first (as the database would).
        self.conversations[conversation.id] = {
            "id": conversation.id,
            "source_id": self.source_id,
            "user_id": conversation.user_id,
            "n_messages": len(conversation.messages),
            "data": to_json(conversation),
        }
        for case in new_cases:
            self.cases.setdefault(
                case.id,
                {
                    "id": case.id,
                    "source_id": self.source_id,
                    "conversation_id": case.conversation_id,
                    "turn_index": case.turn_index,
                    "feedback": case.feedback.value,
                    "data": to_json(case),
                },
            )
        for skip in new_skips:
            self.skips[(skip.conversation_id, skip.message_index)] = {
                "source_id": self.source_id,
                "conversation_id": skip.conversation_id,
                "message_index": skip.message_index,
                "reason": skip.reason.value,
            }


class CasesRepository(StoreBase):
    """Writing and reading ingested data."""

    def has_source(self, source_id: str) -> bool:
        """Whether a source with exactly this id has been ingested."""
        with self._read() as conn:
            return conn.execute(select(sources.c.id).where(sources.c.id == source_id)).first() is not None

    def write_source(
        self, source: SourceRecord, items: Iterable[tuple[Conversation, Sequence[Case], Sequence[Skip]]]
    ) -> SourceRecord:
        """Store a source and everything ingested from it, all in one transaction.

        ``items`` is consumed lazily and written in batches, so memory stays flat; if it (or the database)
        raises, nothing is written. Conversations are upserted by id (a later, longer export replaces an
        earlier one); cases are inserted only if absent (re-ingesting is a no-op); skips are keyed by
        (source, conversation, message index). The returned record counts what ``items`` yielded.
        """
        n_conversations = n_cases = n_skipped = 0
        with self._write() as conn:
            row = source.model_dump() | {"n_conversations": 0, "n_cases": 0, "n_skipped": 0}
            conn.execute(self._upsert(sources, ["id"]), [row])
            batch = _IngestBatch(source.id)
            for conversation, new_cases, new_skips in items:
                batch.add(conversation, new_cases, new_skips)
                n_conversations += 1
                n_cases += len(new_cases)
                n_skipped += len(new_skips)
                if len(batch) >= BATCH_SIZE:
                    self._flush(conn, batch)
                    batch = _IngestBatch(source.id)
            self._flush(conn, batch)
            conn.execute(
                update(sources)
                .where(sources.c.id == source.id)
                .values(n_conversations=n_conversations, n_cases=n_cases, n_skipped=n_skipped)
            )
            stored = conn.execute(select(sources).where(sources.c.id == source.id)).one()
        return _source(stored)

    def _flush(self, conn: Connection, batch: _IngestBatch) -> None:
        # Conversations first: cases refer to them.
        if batch.conversations:
            conn.execute(self._upsert(conversations, ["id"]), list(batch.conversations.values()))
        if batch.cases:
            conn.execute(self._insert_ignore(cases, ["id"]), list(batch.cases.values()))
        if batch.skips:
            keys = ["source_id", "conversation_id", "message_index"]
            conn.execute(self._upsert(skips, keys), list(batch.skips.values()))

    def list_sources(self) -> list[SourceRecord]:
        """Every ingested source, oldest first."""
        with self._read() as conn:
            rows = conn.execute(select(sources).order_by(sources.c.ingested_at, sources.c.id)).all()
        return [_source(r) for r in rows]

    def get_source(self, source_id_or_prefix: str) -> SourceRecord | None:
        """The source with this id or unique id prefix; raises ``StoreError`` if the prefix is ambiguous."""
        with self._read() as conn:
            found = unique_by_prefix(conn, sources.c.id, source_id_or_prefix, "source")
            if found is None:
                return None
            return _source(conn.execute(select(sources).where(sources.c.id == found)).one())

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        """The stored (latest ingested) version of a conversation, if any."""
        with self._read() as conn:
            data = conn.execute(
                select(conversations.c.data).where(conversations.c.id == conversation_id)
            ).scalar()
        return None if data is None else Conversation.model_validate_json(data)

    def iter_cases(
        self, source_ids: Sequence[str] | None = None, tags: Mapping[str, str] | None = None
    ) -> Iterator[Case]:
        """Cases ordered by (conversation_id, turn_index), optionally only from ``source_ids`` (the sources
        that first ingested them) and only those whose tags include every ``tags`` item.

        Reads page by page, each page in its own short transaction, so no connection is held between pages.
        """
        order = (cases.c.conversation_id, cases.c.turn_index, cases.c.id)
        after: tuple[Any, ...] | None = None
        while True:
            query = select(*order, cases.c.data).order_by(*order).limit(BATCH_SIZE)
            if source_ids is not None:
                query = query.where(cases.c.source_id.in_(list(source_ids)))
            if after is not None:
                query = query.where(tuple_(*order) > tuple_(*after))
            with self._read() as conn:
                rows = conn.execute(query).all()
            for row in rows:
                case = Case.model_validate_json(row.data)
                if not tags or all(case.tags.get(k) == v for k, v in tags.items()):
                    yield case
            if len(rows) < BATCH_SIZE:
                return
            after = tuple(rows[-1][:3])

    def count_cases(self) -> int:
        """How many cases the store holds."""
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(cases)).scalar_one())

    def get_cases(self, case_ids: Sequence[str]) -> dict[str, Case]:
        """The stored cases among ``case_ids``, by id (ids not found are left out)."""
        found: dict[str, Case] = {}
        with self._read() as conn:
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                rows = conn.execute(select(cases.c.id, cases.c.data).where(cases.c.id.in_(chunk)))
                found.update((r.id, Case.model_validate_json(r.data)) for r in rows)
        return found

    def skip_counts(self, source_ids: Sequence[str] | None = None) -> dict[SkipReason, int]:
        """How many messages were skipped for each reason (reasons with none are left out)."""
        query = select(skips.c.reason, func.count()).group_by(skips.c.reason)
        if source_ids is not None:
            query = query.where(skips.c.source_id.in_(list(source_ids)))
        with self._read() as conn:
            rows = conn.execute(query).all()
        return {SkipReason(reason): int(n) for reason, n in rows}


def _source(row: Row[Any]) -> SourceRecord:
    return SourceRecord.model_validate(row._asdict())
