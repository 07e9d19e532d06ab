"""Regression sets in the store: frozen versions with their items, and the pins and drops later builds apply.

A version is written once, with its items, in one transaction, and never changed: there is no update. Pinning
or dropping a question by hand records an override and makes a new version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, Row, case, func, select

from ragreplay.core.regset import STRATA, RegressionSetRecord, SetItem
from ragreplay.store.base import BATCH_SIZE, StoreBase, unique_by_prefix
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import dumps, regset_items, regset_overrides, regsets

OverrideAction = Literal["pin", "drop"]
OVERRIDE_ACTIONS: tuple[OverrideAction, ...] = ("pin", "drop")
_VERSION = re.compile(r"^v(\d+)$")
_STRATUM_ORDER = case({s: i for i, s in enumerate(STRATA)}, value=regset_items.c.stratum, else_=len(STRATA))


class RegsetsRepository(StoreBase):
    """Creating and reading regression set versions; the overrides (pin/drop by key) builds apply."""

    def create_set(self, record: RegressionSetRecord, items: Sequence[SetItem]) -> None:
        """Store a new version and its items in one transaction. :class:`StoreError` if its id or version
        number is taken (another build got there first: build again) or two items share a key."""
        keys = [item.key for item in items]
        if len(set(keys)) != len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise StoreError(f"A regression set cannot hold the same key twice: {', '.join(twice[:5])}.")
        with self._write() as conn:
            if conn.execute(select(regsets.c.id).where(regsets.c.id == record.id)).first():
                raise StoreError(
                    f"A regression set with id {record.id!r} already exists in the store at {self.url}."
                )
            taken = select(regsets.c.id).where(regsets.c.version == record.version)
            if conn.execute(taken).first():
                raise StoreError(
                    f"Regression set version v{record.version} already exists in the store at {self.url} "
                    "(another build saved it first). Fix: run the command again."
                )
            conn.execute(regsets.insert(), [_set_row(record)])
            values = [_item_row(record.id, item) for item in items]
            for start in range(0, len(values), BATCH_SIZE):
                conn.execute(regset_items.insert(), values[start : start + BATCH_SIZE])

    def get_set(self, ref: str) -> RegressionSetRecord | None:
        """The version named by ``ref``: ``latest``, ``vN``, an id or a unique id prefix; ``None`` if there is
        none. :class:`StoreError` if an id prefix is ambiguous."""
        ref = ref.strip()
        with self._read() as conn:
            if ref == "latest":
                query = select(regsets).order_by(regsets.c.version.desc()).limit(1)
            elif match := _VERSION.match(ref):
                query = select(regsets).where(regsets.c.version == int(match.group(1)))
            else:
                found = unique_by_prefix(conn, regsets.c.id, ref, "regression set")
                if found is None:
                    return None
                query = select(regsets).where(regsets.c.id == found)
            row = conn.execute(query).first()
        return None if row is None else _record(row)

    def list_sets(self) -> list[RegressionSetRecord]:
        """Every version, newest first."""
        with self._read() as conn:
            return [_record(r) for r in conn.execute(select(regsets).order_by(regsets.c.version.desc()))]

    def load_items(self, set_id: str) -> list[SetItem]:
        """The items of a version, by stratum (win, contested, wound) then key."""
        query = (
            select(regset_items.c.payload)
            .where(regset_items.c.set_id == set_id)
            .order_by(_STRATUM_ORDER, regset_items.c.key)
        )
        with self._read() as conn:
            return [SetItem.model_validate_json(payload) for payload in conn.execute(query).scalars()]

    def find_item(self, key: str) -> tuple[RegressionSetRecord, SetItem] | None:
        """The newest version that holds ``key``, with that item; ``None`` if no version does."""
        query = (
            select(regsets, regset_items.c.payload.label("item_payload"))
            .join(regset_items, regset_items.c.set_id == regsets.c.id)
            .where(regset_items.c.key == key)
            .order_by(regsets.c.version.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        return _record(row), SetItem.model_validate_json(row.item_payload)

    def next_version(self) -> int:
        """The number the next version gets: one more than the highest stored, 1 for the first."""
        with self._read() as conn:
            return _next_version(conn)

    def set_override(self, key: str, action: OverrideAction, reason: str) -> None:
        """Record that ``key`` is pinned (always in) or dropped (always out) from now on; a later override of
        the same key replaces an earlier one."""
        if action not in OVERRIDE_ACTIONS:
            raise StoreError(f"Unknown override action {action!r}. Fix: use 'pin' or 'drop'.")
        row = {"key": key, "action": action, "reason": reason, "created_at": datetime.now(UTC)}
        with self._write() as conn:
            conn.execute(self._upsert(regset_overrides, ["key"]), [row])

    def overrides(self) -> dict[str, str]:
        """Every override: key -> ``pin`` or ``drop``."""
        query = select(regset_overrides.c.key, regset_overrides.c.action).order_by(regset_overrides.c.key)
        with self._read() as conn:
            return {key: action for key, action in conn.execute(query)}

    def override_reasons(self) -> dict[str, str]:
        """Every override's reason, by key."""
        query = select(regset_overrides.c.key, regset_overrides.c.reason).order_by(regset_overrides.c.key)
        with self._read() as conn:
            return {key: reason for key, reason in conn.execute(query)}


def _next_version(conn: Connection) -> int:
    return int(conn.execute(select(func.coalesce(func.max(regsets.c.version), 0))).scalar_one()) + 1


def _set_row(record: RegressionSetRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "version": record.version,
        "created_at": record.created_at,
        "recipe": dumps(record.recipe),
        "inputs_digest": record.inputs_digest,
        "counts": dumps(record.counts),
        "parent_id": record.parent_id,
        "note": record.note,
    }


def _item_row(set_id: str, item: SetItem) -> dict[str, Any]:
    return {
        "set_id": set_id,
        "key": item.key,
        "stratum": item.stratum,
        "cluster": item.cluster,
        "inclusion_probability": item.inclusion_probability,
        "count": item.count,
        "weight": item.weight,
        "pinned": item.pinned,
        "payload": dumps(item.model_dump(mode="json")),
    }


def _record(row: Row[Any]) -> RegressionSetRecord:
    return RegressionSetRecord(
        id=row.id,
        version=row.version,
        created_at=row.created_at,
        recipe=json.loads(row.recipe),
        inputs_digest=row.inputs_digest,
        counts=json.loads(row.counts),
        parent_id=row.parent_id,
        note=row.note,
    )
