"""Comparisons in the store, on SQLite and PostgreSQL: create, find to resume, status, rows saved and read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.exc import IntegrityError

from ragreplay.core.comparisons import ComparisonRecord, ComparisonRowRecord
from ragreplay.core.runs import RunStatus, SourceRecord
from ragreplay.core.types import Case, Conversation, Feedback, Message, Role
from ragreplay.store import Store, StoreError

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
CONFIG = {"champion": {"name": "prod", "version": "v1"}, "order": "both", "cases": "log.jsonl", "n": 1.5}


def record(
    cid: str,
    at: datetime = T0,
    status: RunStatus = RunStatus.RUNNING,
    config_hash: str = "cfg1",
    dataset_hash: str = "ds1",
) -> ComparisonRecord:
    return ComparisonRecord(
        id=cid,
        created_at=at,
        status=status,
        config=CONFIG,
        config_hash=config_hash,
        dataset_hash=dataset_hash,
        n_cases=3,
    )


def row(cid: str, case_id: str, challenger: str, value: object = 1) -> ComparisonRowRecord:
    payload = {"row": {"case_id": case_id, "value": value}, "outcome": None, "text": "héllo ✓"}
    return ComparisonRowRecord(comparison_id=cid, case_id=case_id, challenger=challenger, payload=payload)


def test_create_get_by_prefix_and_list_newest_first(store: Store) -> None:
    first, second = record("cmp_20261001_a1"), record("cmp_20261001_b2", T0 + timedelta(minutes=1))
    store.comparisons.create_comparison(first)
    store.comparisons.create_comparison(second)
    assert store.comparisons.get_comparison("cmp_20261001_a") == first
    assert store.comparisons.get_comparison(second.id) == second
    assert (
        store.comparisons.get_comparison("cmp_nope") is None and store.comparisons.get_comparison("") is None
    )
    with pytest.raises(StoreError, match="ambiguous"):
        store.comparisons.get_comparison("cmp_2026")
    with pytest.raises(StoreError, match="already exists"):
        store.comparisons.create_comparison(first)
    assert store.comparisons.list_comparisons() == [second, first]
    assert store.comparisons.list_comparisons(limit=1) == [second]
    assert store.comparisons.get_comparison(first.id).created_at.tzinfo is not None  # type: ignore[union-attr]


def test_find_resumable_comparison_by_hashes_and_status(store: Store) -> None:
    store.comparisons.create_comparison(record("cmp_old", T0, RunStatus.INTERRUPTED))
    store.comparisons.create_comparison(record("cmp_new", T0 + timedelta(hours=1), RunStatus.RUNNING))
    store.comparisons.create_comparison(record("cmp_other_cfg", T0 + timedelta(hours=2), config_hash="cfg2"))
    store.comparisons.create_comparison(record("cmp_other_ds", T0 + timedelta(hours=3), dataset_hash="ds2"))
    found = store.comparisons.find_unfinished_comparison("cfg1", "ds1")
    assert found is not None and found.id == "cmp_new"
    store.comparisons.set_comparison_status("cmp_new", RunStatus.DONE, T0 + timedelta(hours=4))
    found = store.comparisons.find_unfinished_comparison("cfg1", "ds1")
    assert found is not None and found.id == "cmp_old"
    latest = store.comparisons.find_comparison("cfg1", "ds1")
    assert latest is not None and latest.id == "cmp_new" and latest.status == RunStatus.DONE
    assert latest.finished_at == T0 + timedelta(hours=4)
    store.comparisons.set_comparison_status("cmp_old", RunStatus.DONE)
    assert store.comparisons.find_unfinished_comparison("cfg1", "ds1") is None
    assert store.comparisons.find_unfinished_comparison("cfg9", "ds1") is None
    with pytest.raises(StoreError, match="no comparison 'cmp_missing'"):
        store.comparisons.set_comparison_status("cmp_missing", RunStatus.DONE)


def test_rows_are_saved_replaced_and_read_back_in_case_order(store: Store) -> None:
    # Cases in the store order by conversation and turn, not by id: rows follow that order.
    messages = (Message(role=Role.HUMAN, content="q"), Message(role=Role.AI, content="a"))
    cases = [
        Case(
            id=cid,
            conversation_id="conv",
            turn_index=turn,
            query="q",
            history=(),
            old_answer="a",
            feedback=Feedback.GOOD,
            ts=T0,
        )
        for cid, turn in (("case_z", 1), ("case_a", 3))
    ]
    source = SourceRecord(id="src_1", path="/x.jsonl", format="jsonl", ingested_at=T0)
    store.cases.write_source(source, [(Conversation(id="conv", messages=messages), cases, [])])
    store.comparisons.create_comparison(record("cmp_1"))
    store.comparisons.create_comparison(record("cmp_2"))
    store.comparisons.save_comparison_rows(
        [row("cmp_1", "case_a", "b"), row("cmp_1", "case_a", "a"), row("cmp_1", "case_z", "b")]
    )
    store.comparisons.save_comparison_row(row("cmp_1", "case_elsewhere", "a"))
    store.comparisons.save_comparison_row(row("cmp_2", "case_z", "a"))
    store.comparisons.save_comparison_rows([row("cmp_1", "case_z", "b", 2), row("cmp_1", "case_z", "b", 3)])
    store.comparisons.save_comparison_rows([])
    loaded = store.comparisons.load_comparison_rows("cmp_1")
    assert [(r.case_id, r.challenger) for r in loaded] == [
        ("case_z", "b"),
        ("case_a", "a"),
        ("case_a", "b"),
        ("case_elsewhere", "a"),
    ]
    assert loaded[0] == row("cmp_1", "case_z", "b", 3)
    assert [r.case_id for r in store.comparisons.load_comparison_rows("cmp_1", ["case_a"])] == [
        "case_a",
        "case_a",
    ]
    assert store.comparisons.comparison_row_keys("cmp_2") == {("case_z", "a")}
    assert store.comparisons.compared_case_counts(["cmp_1", "cmp_2", "cmp_none"]) == {"cmp_1": 3, "cmp_2": 1}
    assert store.comparisons.load_comparison_rows("cmp_none") == []


def test_a_row_needs_its_comparison(store: Store) -> None:
    with pytest.raises(IntegrityError):
        store.comparisons.save_comparison_row(row("cmp_missing", "case_a", "a"))
    assert store.comparisons.load_comparison_rows("cmp_missing") == []
