"""Ingested sources and what came out of them: conversations, cases and skipped messages."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import Connection, Row, func, select, tuple_, update

from ragreplay.core.extract import SHORT_HISTORY, Dialogue
from ragreplay.core.runs import SourceRecord
from ragreplay.core.types import Case, Conversation, Message, Skip, SkipReason
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked, unique_by_prefix
from ragreplay.store.schema import cases, conversations, dialogues, skips, sources

_MESSAGES = TypeAdapter(tuple[Message, ...])


def _history_length(dialogue: Dialogue, case: Case) -> int | None:
    """How much of ``dialogue`` is ``case``'s history, or ``None`` when the case does not come from it (its
    turn is past the conversation's end, or it carries another history)."""
    if not 0 <= case.turn_index < dialogue.n_messages:
        return None
    length = dialogue.history_length(case.turn_index)
    if case.history and case.history != dialogue.history(case.turn_index):
        return None
    return length


def _with(case: Case, history: tuple[Message, ...]) -> Case:
    """``case`` with ``history`` (already validated), without copying the rest; model_copy would copy it."""
    return Case.model_construct(case.model_fields_set, **{**case.__dict__, "history": history})


class _IngestBatch:
    """Rows waiting to be written, deduplicated the way each table resolves conflicts."""

    def __init__(self, source_id: str) -> None:
        self.source_id = source_id
        self.conversations: dict[str, dict[str, Any]] = {}
        self.dialogues: dict[str, dict[str, Any]] = {}
        self.cases: dict[str, dict[str, Any]] = {}
        self.skips: dict[tuple[str, int], dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.conversations) + len(self.dialogues) + len(self.cases) + len(self.skips)

    def add(self, conversation: Conversation, new_cases: Sequence[Case], new_skips: Sequence[Skip]) -> None:
        """Queue one conversation with its cases and skips.

        A long conversation's dialogue is stored once (by the hash of its content, so a later, longer export
        of the conversation does not change what an earlier case saw), and each case keeps how much of it is
        its history; short histories (up to ``SHORT_HISTORY`` messages) are stored with their case. A case
        may come with its history or without it (``extract_cases(..., history_up_to=...)``); either way it is
        the dialogue's.
        """
        # A conversation seen twice keeps its last version; a case its first (as the database would).
        self.conversations[conversation.id] = {
            "id": conversation.id,
            "source_id": self.source_id,
            "user_id": conversation.user_id,
            "n_messages": len(conversation.messages),
            "data": conversation.model_dump_json(),
        }
        if new_cases:
            dialogue = Dialogue.of(conversation)
            lengths = {c.id: _history_length(dialogue, c) for c in new_cases}
            # Short histories stay inline (one row less per conversation); a long one is stored once.
            longest = max((n for n in lengths.values() if n is not None), default=0)
            dialogue_id = self._add_dialogue(dialogue) if longest > SHORT_HISTORY else None
            for case in new_cases:
                if case.id in self.cases:
                    continue
                history_len = lengths[case.id]
                reference: str | None = None
                if history_len is None:  # not this conversation's dialogue (a hand-made case): kept as given
                    stored = case
                elif dialogue_id is None:
                    stored = (
                        case
                        if case.history or not history_len
                        else _with(case, dialogue.history(case.turn_index))
                    )
                else:
                    stored = _with(case, ()) if case.history else case
                    reference = dialogue_id if history_len else None
                self.cases[case.id] = {
                    "id": case.id,
                    "source_id": self.source_id,
                    "conversation_id": case.conversation_id,
                    "turn_index": case.turn_index,
                    "feedback": case.feedback.value,
                    "data": stored.model_dump_json(),
                    # without a dialogue the history is in ``data`` (and the row reads like one from before)
                    "dialogue_id": reference,
                    "history_len": len(case.history) if history_len is None else history_len,
                }
        for skip in new_skips:
            self.skips[(skip.conversation_id, skip.message_index)] = {
                "source_id": self.source_id,
                "conversation_id": skip.conversation_id,
                "message_index": skip.message_index,
                "reason": skip.reason.value,
            }

    def _add_dialogue(self, dialogue: Dialogue) -> str:
        data = _MESSAGES.dump_json(dialogue.messages)
        dialogue_id = "dlg_" + hashlib.sha256(data).hexdigest()[:32]
        row = {"id": dialogue_id, "n_messages": len(dialogue.messages), "data": data.decode("utf-8")}
        self.dialogues.setdefault(dialogue_id, row)
        return dialogue_id


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
        # Conversations and dialogues first: cases refer to them. On SQLite the rows go straight to the driver.
        self._execute_rows(conn, self._upsert(conversations, ["id"]), list(batch.conversations.values()))
        self._execute_rows(conn, self._insert_ignore(dialogues, ["id"]), list(batch.dialogues.values()))
        self._execute_rows(conn, self._insert_ignore(cases, ["id"]), list(batch.cases.values()))
        keys = ["source_id", "conversation_id", "message_index"]
        self._execute_rows(conn, self._upsert(skips, keys), list(batch.skips.values()))

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
        Pages start small and double up to ``BATCH_SIZE``, so the first cases come at once.
        """
        order = (cases.c.conversation_id, cases.c.turn_index, cases.c.id)
        after: tuple[Any, ...] | None = None
        parsed: dict[str, tuple[Message, ...]] = {}
        size = min(FIRST_PAGE, BATCH_SIZE)
        while True:
            query = select(*order, *_CASE_COLUMNS).order_by(*order).limit(size)
            if source_ids is not None:
                query = query.where(cases.c.source_id.in_(list(source_ids)))
            if after is not None:
                query = query.where(tuple_(*order) > tuple_(*after))
            with self._read() as conn:
                rows = conn.execute(query).all()
                found = _cases_of(conn, rows, parsed)
            # rows come by conversation: only the last page's last dialogue can be needed again
            last = rows[-1].dialogue_id if rows else None
            parsed = {last: parsed[last]} if last in parsed else {}
            for case in found:
                if not tags or all(case.tags.get(k) == v for k, v in tags.items()):
                    yield case
            if len(rows) < size:
                return
            after = tuple(rows[-1][:3])
            size = min(2 * size, BATCH_SIZE)

    def count_cases(self) -> int:
        """How many cases the store holds."""
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(cases)).scalar_one())

    def iter_case_ids(self, source_ids: Sequence[str] | None = None) -> Iterator[str]:
        """The ids of :meth:`iter_cases` (without a tag filter) in the same order, reading only ids."""
        query = select(cases.c.id).order_by(cases.c.conversation_id, cases.c.turn_index, cases.c.id)
        if source_ids is not None:
            query = query.where(cases.c.source_id.in_(list(source_ids)))
        with self._read() as conn:
            ids = list(conn.execute(query).scalars())
        yield from ids

    def get_cases(self, case_ids: Sequence[str]) -> dict[str, Case]:
        """The stored cases among ``case_ids``, by id (ids not found are left out)."""
        found: dict[str, Case] = {}
        with self._read() as conn:
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                rows = conn.execute(select(*_CASE_COLUMNS).where(cases.c.id.in_(chunk))).all()
                found.update((c.id, c) for c in _cases_of(conn, rows))
        return found

    def skip_counts(self, source_ids: Sequence[str] | None = None) -> dict[SkipReason, int]:
        """How many messages were skipped for each reason (reasons with none are left out)."""
        query = select(skips.c.reason, func.count()).group_by(skips.c.reason)
        if source_ids is not None:
            query = query.where(skips.c.source_id.in_(list(source_ids)))
        with self._read() as conn:
            rows = conn.execute(query).all()
        return {SkipReason(reason): int(n) for reason, n in rows}


_CASE_COLUMNS = (cases.c.data, cases.c.dialogue_id, cases.c.history_len)
FIRST_PAGE = 64
"""Cases on the first page :meth:`CasesRepository.iter_cases` reads."""


def _cases_of(
    conn: Connection, rows: Sequence[Any], parsed: dict[str, tuple[Message, ...]] | None = None
) -> list[Case]:
    """The cases of ``rows`` (selected with ``_CASE_COLUMNS``), each dialogue read and parsed once; ``parsed``
    keeps the dialogues already parsed (a long conversation's cases span many pages)."""
    messages = parsed if parsed is not None else {}
    wanted = sorted({r.dialogue_id for r in rows if r.dialogue_id is not None} - messages.keys())
    for chunk in chunked(wanted):
        for d in conn.execute(select(dialogues.c.id, dialogues.c.data).where(dialogues.c.id.in_(chunk))):
            messages[d.id] = _MESSAGES.validate_json(d.data)
    found = []
    for row in rows:
        case = Case.model_validate_json(row.data)
        if row.dialogue_id is not None:  # rows stored before migration 13 hold their history in ``data``
            case = _with(case, messages[row.dialogue_id][: row.history_len])
        found.append(case)
    return found


def _source(row: Row[Any]) -> SourceRecord:
    return SourceRecord.model_validate(row._asdict())
