"""The gates repository on SQLite and PostgreSQL: create, resume lookup, items upserted, history, graduation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragreplay.core.gate import ItemOutcome
from ragreplay.core.runs import RunStatus
from ragreplay.gate.run import graduated_keys
from ragreplay.store import Store, StoreError
from ragreplay.store.gates import GateItemRecord, GateRecord

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def record(gate_id: str, at: datetime, config_hash: str = "h1", challenger: str = "b") -> GateRecord:
    return GateRecord(
        id=gate_id,
        created_at=at,
        status=RunStatus.RUNNING,
        set_id="rs1",
        challenger=challenger,
        config={"challenger": {"name": challenger}},
        config_hash=config_hash,
        n_items=2,
    )


def item(gate_id: str, key: str, score: float | None, stratum: str = "wound") -> GateItemRecord:
    outcome = ItemOutcome(key=key, stratum=stratum, challenger_score=score)  # type: ignore[arg-type]
    return GateItemRecord(
        gate_id=gate_id, key=key, stratum=stratum, payload={"outcome": outcome.model_dump(mode="json")}
    )


def test_gates_are_created_found_resumed_and_finished(store: Store) -> None:
    store.gates.create_gate(record("gate_a", T0))
    with pytest.raises(StoreError, match="already exists"):
        store.gates.create_gate(record("gate_a", T0))
    assert (
        store.gates.find_unfinished_gate("h1") is not None and store.gates.find_unfinished_gate("h2") is None
    )
    store.gates.save_gate_items(
        [item("gate_a", "k1", 4.0), item("gate_a", "k1", 5.0), item("gate_a", "k2", 1.0)]
    )
    assert store.gates.gate_item_keys("gate_a") == {"k1", "k2"}
    (k1, _) = store.gates.load_gate_items("gate_a")
    assert k1.payload["outcome"]["challenger_score"] == 5.0  # the last write for a key wins
    store.gates.set_gate_status("gate_a", RunStatus.INTERRUPTED)
    assert store.gates.find_unfinished_gate("h1") is not None  # interrupted gates resume too
    store.gates.finish_gate("gate_a", "pass", {"decision": "pass"})
    done = store.gates.get_gate("gate_a")
    assert (
        done is not None
        and done.status == "done"
        and done.decision == "pass"
        and done.verdict == {"decision": "pass"}
    )
    assert done.finished_at is not None and store.gates.find_unfinished_gate("h1") is None
    assert store.gates.get_gate("gate_") is not None  # a unique prefix
    with pytest.raises(StoreError, match="no gate"):
        store.gates.set_gate_status("gate_missing", RunStatus.DONE)


def test_history_and_graduation_over_consecutive_finished_gates(store: Store) -> None:
    scores = {"g1": (4.5, 4.5), "g2": (2.0, 4.5), "g3": (4.5, 4.5), "g4": (4.5, 4.5)}
    for i, (gate_id, (k1, k2)) in enumerate(scores.items()):
        store.gates.create_gate(record(gate_id, T0 + timedelta(days=i), config_hash=gate_id))
        store.gates.save_gate_items([item(gate_id, "k1", k1), item(gate_id, "k2", k2)])
        store.gates.finish_gate(gate_id, "fail", {})
    store.gates.create_gate(record("g5_running", T0 + timedelta(days=9), config_hash="g5"))
    store.gates.save_gate_items([item("g5_running", "k1", 1.0)])  # unfinished gates do not count
    history = store.gates.item_history(["k1", "k2", "k3"])
    assert [e["gate_id"] for e in history["k1"]] == ["g1", "g2", "g3", "g4"] and history["k3"] == []
    # k1 was open in g2: fixed only in the last 2; k2 fixed in all 4
    assert graduated_keys(store, ["k1", "k2"], after=3) == {"k2"}
    assert graduated_keys(store, ["k1", "k2"], after=2) == {"k1", "k2"}
    assert graduated_keys(store, ["k1", "k2"], after=3, challenger="other") == frozenset()


def test_wounds_the_newest_gate_left_open_stay_open(store: Store) -> None:
    from ragreplay.gate.run import open_wound_keys

    for i, (gate_id, k1, k2) in enumerate([("g1", 4.5, 1.0), ("g2", 1.0, 4.5)]):
        store.gates.create_gate(record(gate_id, T0 + timedelta(days=i), config_hash=gate_id))
        store.gates.save_gate_items(
            [item(gate_id, "k1", k1), item(gate_id, "k2", k2), item(gate_id, "w1", None, "win")]
        )
        store.gates.finish_gate(gate_id, "fail", {})
    # k1 was fixed in g1 but open again in g2; k2 the other way round; a win is never a wound; unknown keys none
    assert open_wound_keys(store, ["k1", "k2", "w1", "nope"]) == {"k1"}
