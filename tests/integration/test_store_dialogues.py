"""A conversation's dialogue is stored once, not again with every case (SQLite and PostgreSQL): the store grows
linearly with a conversation's length, cases read back with their whole history, a later export of a
conversation does not rewrite what an earlier case saw, and cases stored before dialogues still read back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from ragreplay.core.extract import extract_cases
from ragreplay.core.types import Conversation, Feedback, Message, Role
from ragreplay.ingest import ingest_file
from ragreplay.store import Store
from ragreplay.store.connect import create_store_engine, parse_store_url
from ragreplay.store.migrations import MIGRATIONS, latest_version, migrate
from ragreplay.store.schema import cases, dialogues


def long_conversation(n_turns: int, conv_id: str = "long", first: str = "hello") -> dict[str, object]:
    """One conversation of ``n_turns`` labelled question/answer pairs, as a canonical log line."""
    messages: list[dict[str, object]] = []
    for i in range(n_turns):
        messages.append({"role": "human", "content": first if i == 0 else f"question {i} about leave?"})
        messages.append({"role": "system", "content": "retrieval ran"})
        messages.append(
            {"role": "ai", "content": f"answer {i}: {i % 30} days.", "feedback": "good" if i % 2 else "bad"}
        )
    return {"id": conv_id, "messages": messages}


def write_log(path: Path, *conversations: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    return path


def stored_chars(store: Store) -> int:
    with store._engine.connect() as conn:
        case_chars = conn.execute(select(func.sum(func.length(cases.c.data)))).scalar_one()
        dialogue_chars = conn.execute(
            select(func.coalesce(func.sum(func.length(dialogues.c.data)), 0))
        ).scalar_one()
    return int(case_chars) + int(dialogue_chars)


def test_a_long_conversation_is_stored_once_and_read_back_whole(store: Store, tmp_path: Path) -> None:
    small = write_log(tmp_path / "small.jsonl", long_conversation(50, "small"))
    large = write_log(tmp_path / "large.jsonl", long_conversation(400, "large"))
    ingest_file(small, store)
    small_chars = stored_chars(store)
    ingest_file(large, store)
    large_chars = stored_chars(store) - small_chars
    # 8x the turns: linear is ~8x the characters, storing each case's history again would be ~64x
    assert large_chars < 12 * small_chars
    with store._engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(dialogues)).scalar_one() == 2

    conv = store.cases.get_conversation("large")
    assert conv is not None
    expected = {c.id: c for c in extract_cases(conv)[0]}
    read = {c.id: c for c in store.cases.iter_cases() if c.conversation_id == "large"}
    assert read == expected
    assert len(read[max(read, key=lambda k: read[k].turn_index)].history) == 2 * 399
    some = sorted(expected)[:5]
    assert store.cases.get_cases(some) == {k: expected[k] for k in some}


@pytest.mark.parametrize("turns", [2, 12], ids=["inline", "dialogue"])
def test_a_later_export_does_not_change_what_an_earlier_case_saw(
    store: Store, tmp_path: Path, turns: int
) -> None:
    ingest_file(write_log(tmp_path / "v1.jsonl", long_conversation(turns, "c", first="first version")), store)
    before = {c.id: c for c in store.cases.iter_cases()}
    ingest_file(
        write_log(tmp_path / "v2.jsonl", long_conversation(turns + 1, "c", first="edited later")), store
    )
    after = {c.id: c for c in store.cases.iter_cases()}
    kept = [k for k in before if before[k].history]
    assert kept and all(after[k] == before[k] for k in kept)
    assert after[kept[0]].history[0].content == "first version"
    newest = max(after.values(), key=lambda c: c.turn_index)
    assert newest.history[0].content == "edited later"


def test_a_case_given_with_its_history_is_stored_the_same(store: Store) -> None:
    from ragreplay.core.runs import SourceRecord

    conv = Conversation(
        id="c1",
        messages=(
            Message(role=Role.HUMAN, content="q0"),
            Message(role=Role.AI, content="a0", feedback=Feedback.GOOD),
            Message(role=Role.HUMAN, content="q1"),
            Message(role=Role.AI, content="a1", feedback=Feedback.BAD),
        ),
    )
    full, skips = extract_cases(conv)
    light, _ = extract_cases(conv, history_up_to=0)
    assert [c.history for c in light] == [(), ()] and len(full[1].history) == 2
    record = SourceRecord(
        id="src_1", path="x", format="canonical", ingested_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    store.cases.write_source(record, [(conv, full, skips)])
    assert sorted(store.cases.iter_cases(), key=lambda c: c.turn_index) == full


def test_cases_stored_before_dialogues_read_back_after_the_migration(store_url: str) -> None:
    conv = Conversation(
        id="old",
        messages=(
            Message(role=Role.HUMAN, content="q0"),
            Message(role=Role.AI, content="a0", feedback=Feedback.GOOD),
            Message(role=Role.HUMAN, content="q1"),
            Message(role=Role.AI, content="a1", feedback=Feedback.BAD),
        ),
    )
    old_case = extract_cases(conv)[0][1]
    engine = create_store_engine(parse_store_url(store_url)[0])
    try:
        with engine.connect() as conn, conn.begin():
            assert migrate(conn, store_url, MIGRATIONS[:12])[-1] == 12
            conn.execute(
                text(
                    "INSERT INTO sources (id, path, format, ingested_at, n_conversations, n_cases, n_skipped) "
                    "VALUES ('src_old', 'x', 'canonical', :ts, 1, 1, 0)"
                ),
                {"ts": datetime(2026, 1, 1, tzinfo=UTC)},
            )
            conn.execute(
                text(
                    "INSERT INTO conversations (id, source_id, user_id, n_messages, data) "
                    "VALUES ('old', 'src_old', NULL, 4, :data)"
                ),
                {"data": conv.model_dump_json()},
            )
            conn.execute(
                text(
                    "INSERT INTO cases (id, source_id, conversation_id, turn_index, feedback, data) "
                    "VALUES (:id, 'src_old', 'old', 3, 'bad', :data)"
                ),
                {"id": old_case.id, "data": old_case.model_dump_json()},
            )
    finally:
        engine.dispose()
    with Store.open(store_url) as store:
        assert store.schema_version() == latest_version()
        assert list(store.cases.iter_cases()) == [old_case]
        assert store.cases.get_cases([old_case.id]) == {old_case.id: old_case}


def test_a_hand_made_case_that_is_not_its_conversations_dialogue_is_kept_as_given(store: Store) -> None:
    from ragreplay.core.runs import SourceRecord
    from ragreplay.core.types import Case

    conv = Conversation(id="c2", messages=(Message(role=Role.HUMAN, content="q0"),))
    own_history = (Message(role=Role.HUMAN, content="earlier, elsewhere"),)
    past_the_end = Case(
        id="case_far",
        conversation_id="c2",
        turn_index=9,
        query="q9",
        history=own_history,
        old_answer="a9",
        feedback=Feedback.GOOD,
    )
    other_history = past_the_end.model_copy(update={"id": "case_other", "turn_index": 0})
    record = SourceRecord(
        id="src_2", path="x", format="canonical", ingested_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    store.cases.write_source(record, [(conv, [past_the_end, other_history], [])])
    assert store.cases.get_cases(["case_far", "case_other"]) == {
        "case_far": past_the_end,
        "case_other": other_history,
    }
