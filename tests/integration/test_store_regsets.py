"""Regression sets in the store, on SQLite and PostgreSQL: versions written once with their items, found by id,
prefix, ``latest`` or ``vN``, items read back whole in stratum order, overrides recorded and replaced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import inspect

from ragreplay.core.regset import Candidate, RegressionSetRecord, SetItem, Stratum
from ragreplay.core.types import Feedback
from ragreplay.store import Store, StoreError

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
RECIPE = {"window": {"since": "2026-11-23T06:00:00+00:00"}, "seed": 7, "sizes": {"win": 2, "wound": 1}}


def item(question: str, stratum: Stratum, probability: float = 0.5, count: int = 3) -> SetItem:
    candidate = Candidate(
        source="shadow",
        source_id=f"row-{question}",
        request_id=f"req-{question}",
        question=question,
        tags={"dept": "hr"},
        champion_answer="Employees get 25 days. ✓",
        feedback=Feedback.GOOD if stratum == "win" else Feedback.BAD,
        champion_score=4.25,
    )
    return SetItem(
        key=candidate.key,
        stratum=stratum,
        candidate=candidate,
        cluster=1,
        inclusion_probability=probability,
        count=count,
        weight=count / probability,
        merged_keys=["q_0000000000000000"],
    )


def record(set_id: str, version: int, at: datetime = T0, parent: str | None = None) -> RegressionSetRecord:
    return RegressionSetRecord(
        id=set_id,
        version=version,
        created_at=at,
        recipe=RECIPE,
        inputs_digest="abc123",
        counts={"win": 2, "contested": 0, "wound": 1},
        parent_id=parent,
        note="héllo",
    )


ITEMS = [
    item("zeta question", "win"),
    item("alpha question", "wound", 1 / 3),
    item("mid question", "win", 1.0),
]


def test_versions_are_found_by_id_prefix_latest_and_number(store: Store) -> None:
    assert store.regsets.next_version() == 1
    assert store.regsets.get_set("latest") is None and store.regsets.list_sets() == []
    first = record("rs_20261130_060000_aa01", 1)
    second = record("rs_20261130_070000_bb02", 2, T0 + timedelta(hours=1), parent=first.id)
    store.regsets.create_set(first, ITEMS)
    store.regsets.create_set(second, ITEMS[:1])
    assert store.regsets.next_version() == 3
    assert store.regsets.get_set("latest") == second
    assert store.regsets.get_set("v1") == first and store.regsets.get_set(" v2 ") == second
    assert store.regsets.get_set("v3") is None
    assert store.regsets.get_set(first.id) == first
    assert store.regsets.get_set("rs_20261130_07") == second
    assert store.regsets.get_set("rs_nope") is None and store.regsets.get_set("") is None
    with pytest.raises(StoreError, match="ambiguous"):
        store.regsets.get_set("rs_2026")
    assert store.regsets.list_sets() == [second, first]
    assert store.regsets.get_set("v1").created_at.tzinfo is not None  # type: ignore[union-attr]


def test_items_read_back_whole_in_stratum_then_key_order(store: Store) -> None:
    store.regsets.create_set(record("rs_a", 1), ITEMS)
    loaded = store.regsets.load_items("rs_a")
    by_stratum = {"win": 0, "contested": 1, "wound": 2}
    assert loaded == sorted(ITEMS, key=lambda i: (by_stratum[i.stratum], i.key))
    assert {i.key: i for i in loaded} == {i.key: i for i in ITEMS}  # every field, floats exact
    assert store.regsets.load_items("rs_missing") == []


def test_a_version_is_written_once_and_all_or_nothing(store: Store) -> None:
    store.regsets.create_set(record("rs_a", 1), ITEMS)
    with pytest.raises(StoreError, match="already exists"):
        store.regsets.create_set(record("rs_a", 2), ITEMS)
    with pytest.raises(StoreError, match="version v1 already exists"):
        store.regsets.create_set(record("rs_b", 1), ITEMS)
    with pytest.raises(StoreError, match="same key twice"):
        store.regsets.create_set(record("rs_c", 2), [ITEMS[0], ITEMS[0]])
    assert [r.id for r in store.regsets.list_sets()] == ["rs_a"]
    assert not hasattr(store.regsets, "update_set")  # versions are immutable: nothing changes one


def test_find_item_returns_the_newest_version_holding_a_key(store: Store) -> None:
    store.regsets.create_set(record("rs_a", 1), ITEMS)
    store.regsets.create_set(record("rs_b", 2), ITEMS[:1])
    found = store.regsets.find_item(ITEMS[0].key)
    assert found is not None and found[0].id == "rs_b" and found[1] == ITEMS[0]
    found = store.regsets.find_item(ITEMS[1].key)
    assert found is not None and found[0].id == "rs_a" and found[1] == ITEMS[1]
    assert store.regsets.find_item("q_missing") is None


def test_overrides_are_recorded_and_the_last_one_of_a_key_wins(store: Store) -> None:
    assert store.regsets.overrides() == {}
    store.regsets.set_override("q_b", "pin", "the CAO clause everyone asks about")
    store.regsets.set_override("q_a", "drop", "a test question")
    store.regsets.set_override("q_b", "drop", "changed my mind")
    assert store.regsets.overrides() == {"q_a": "drop", "q_b": "drop"}
    assert store.regsets.override_reasons() == {"q_a": "a test question", "q_b": "changed my mind"}
    with pytest.raises(StoreError, match="Unknown override action"):
        store.regsets.set_override("q_c", "keep", "")  # type: ignore[arg-type]


def test_items_never_hold_user_ids(store: Store) -> None:
    store.regsets.create_set(record("rs_a", 1), ITEMS)
    with store._engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("regset_items")}
    assert not {"user_id", "user_hash"} & columns
    assert all("user" not in i.candidate.model_dump() for i in store.regsets.load_items("rs_a"))
