"""Promotion gates and their per-item outcomes, saved as each item is judged; the history per set and challenger.

A gate's ``config`` says what was run (set, champion, challenger, judges, order); ``verdict`` holds the decision
and bars of the last evaluation, so a gate can be re-rendered without calling anything. Item payloads are the gate
layer's JSON: the store keeps them opaque.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Row, select, update

from ragreplay.core.runs import RunStatus
from ragreplay.store.base import BATCH_SIZE, StoreBase, unique_by_prefix
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import dumps, gate_items, gates

_UNFINISHED = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)


class GateRecord(BaseModel):
    """One gate run: what was gated (``config``), how far it got and, once evaluated, its ``verdict``."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_at: datetime
    status: RunStatus
    set_id: str
    challenger: str
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: str
    n_items: int
    decision: str | None = None
    verdict: dict[str, Any] | None = None
    finished_at: datetime | None = None


class GateItemRecord(BaseModel):
    """One item of a gate: its key, stratum and the gate layer's JSON for it."""

    model_config = ConfigDict(frozen=True)

    gate_id: str
    key: str
    stratum: str
    payload: dict[str, Any]


def _record(row: Row[Any]) -> GateRecord:
    data = row._asdict()
    data["config"] = json.loads(data["config"])
    data["verdict"] = json.loads(data["verdict"]) if data["verdict"] is not None else None
    return GateRecord.model_validate(data)


class GatesRepository(StoreBase):
    """Creating gates, resuming them, saving each item's outcome and reading the history back."""

    def create_gate(self, record: GateRecord) -> None:
        """Store a new gate; :class:`StoreError` if its id is taken."""
        row = record.model_dump(mode="python")
        row["status"] = record.status.value
        row["config"] = dumps(record.model_dump(mode="json")["config"])
        row["verdict"] = None if record.verdict is None else dumps(record.verdict)
        with self._write() as conn:
            if conn.execute(select(gates.c.id).where(gates.c.id == record.id)).first():
                raise StoreError(f"A gate with id {record.id!r} already exists in the store at {self.url}.")
            conn.execute(gates.insert(), [row])

    def get_gate(self, id_or_prefix: str) -> GateRecord | None:
        """The gate with this id or unique id prefix; ``StoreError`` if the prefix is ambiguous."""
        with self._read() as conn:
            found = unique_by_prefix(conn, gates.c.id, id_or_prefix, "gate")
            if found is None:
                return None
            return _record(conn.execute(select(gates).where(gates.c.id == found)).one())

    def find_unfinished_gate(self, config_hash: str) -> GateRecord | None:
        """The newest ``running`` or ``interrupted`` gate of this configuration."""
        query = (
            select(gates)
            .where(gates.c.config_hash == config_hash, gates.c.status.in_(_UNFINISHED))
            .order_by(gates.c.created_at.desc(), gates.c.id.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(query).first()
        return None if row is None else _record(row)

    def list_gates(
        self, set_id: str | None = None, challenger: str | None = None, limit: int | None = None
    ) -> list[GateRecord]:
        """Gates newest first, only those of ``set_id`` / ``challenger`` when given."""
        query = select(gates)
        if set_id is not None:
            query = query.where(gates.c.set_id == set_id)
        if challenger is not None:
            query = query.where(gates.c.challenger == challenger)
        query = query.order_by(gates.c.created_at.desc(), gates.c.id.desc()).limit(limit)
        with self._read() as conn:
            return [_record(r) for r in conn.execute(query)]

    def set_gate_status(self, gate_id: str, status: RunStatus) -> None:
        """Move a gate to ``status`` (running again clears its finish time and verdict)."""
        values: dict[str, Any] = {"status": status.value}
        if status == RunStatus.RUNNING:
            values.update(finished_at=None)
        self._update(gate_id, values)

    def finish_gate(self, gate_id: str, decision: str, verdict: dict[str, Any]) -> None:
        """Mark a gate done with its decision and the verdict to re-render it from."""
        values = {
            "status": RunStatus.DONE.value,
            "decision": decision,
            "verdict": dumps(verdict),
            "finished_at": datetime.now(UTC),
        }
        self._update(gate_id, values)

    def _update(self, gate_id: str, values: dict[str, Any]) -> None:
        with self._write() as conn:
            done = conn.execute(update(gates).where(gates.c.id == gate_id).values(**values))
            if done.rowcount == 0:
                raise StoreError(
                    f"There is no gate {gate_id!r} in the store at {self.url}. Fix: pick an id from `ragreplay gates`."
                )

    def save_gate_items(self, items: Sequence[GateItemRecord]) -> None:
        """Insert or replace item outcomes, keyed by (gate, key), in one transaction."""
        with self._write() as conn:
            self.put_gate_items(conn, items)

    def put_gate_items(self, conn: Connection, items: Sequence[GateItemRecord]) -> None:
        """Insert or replace item outcomes inside the caller's transaction ``conn``."""
        now = datetime.now(UTC)
        unique = {
            (i.gate_id, i.key): {
                "gate_id": i.gate_id,
                "key": i.key,
                "stratum": i.stratum,
                "payload": dumps(i.payload),
                "updated_at": now,
            }
            for i in items
        }
        values = list(unique.values())
        stmt = self._upsert(gate_items, ["gate_id", "key"])
        for start in range(0, len(values), BATCH_SIZE):
            conn.execute(stmt, values[start : start + BATCH_SIZE])

    def load_gate_items(self, gate_id: str) -> list[GateItemRecord]:
        """A gate's item outcomes, by stratum then key."""
        query = (
            select(gate_items.c.gate_id, gate_items.c.key, gate_items.c.stratum, gate_items.c.payload)
            .where(gate_items.c.gate_id == gate_id)
            .order_by(gate_items.c.stratum, gate_items.c.key)
        )
        with self._read() as conn:
            return [
                GateItemRecord(gate_id=r.gate_id, key=r.key, stratum=r.stratum, payload=json.loads(r.payload))
                for r in conn.execute(query)
            ]

    def gate_item_keys(self, gate_id: str) -> set[str]:
        """Keys of the items a gate has saved already (the resume plan)."""
        with self._read() as conn:
            return set(
                conn.execute(select(gate_items.c.key).where(gate_items.c.gate_id == gate_id)).scalars()
            )

    def item_history(
        self, keys: Sequence[str], challenger: str | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """For each key, its outcomes in finished gates, oldest first (``payload`` with ``gate_id``): what the
        regression set reads to graduate wounds fixed in N consecutive gates."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, list[dict[str, Any]]] = {k: [] for k in wanted}
        query = (
            select(gate_items.c.key, gate_items.c.gate_id, gate_items.c.payload)
            .join(gates, gates.c.id == gate_items.c.gate_id)
            .where(gates.c.status == RunStatus.DONE.value)
            .order_by(gates.c.finished_at, gates.c.id)
        )
        if challenger is not None:
            query = query.where(gates.c.challenger == challenger)
        with self._read() as conn:
            for start in range(0, len(wanted), BATCH_SIZE):
                part = wanted[start : start + BATCH_SIZE]
                for r in conn.execute(query.where(gate_items.c.key.in_(part))):
                    found[r.key].append({"gate_id": r.gate_id, **json.loads(r.payload)})
        return found
