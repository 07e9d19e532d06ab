"""Golden sets in the store: named, immutable versions with their rows in order.

A version is written once, with its rows, in one transaction, and never changed: there is no update. Saving
rows whose content hash equals the name's latest version writes nothing and returns that version.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, func, select
from sqlalchemy.exc import IntegrityError

from ragreplay.core.golden import GoldenRow, GoldenSetRecord, rows_hash, tag_counts, version_id
from ragreplay.store.base import BATCH_SIZE, StoreBase
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import dumps, golden_rows, golden_sets


class GoldenSetsRepository(StoreBase):
    """Saving and reading golden set versions."""

    def save_version(
        self, name: str, rows: Sequence[GoldenRow], recipe: dict[str, Any]
    ) -> tuple[GoldenSetRecord, bool]:
        """Store ``rows`` as the next version of ``name`` (in one transaction) and return it with ``True``; or,
        when the latest version holds the same content, write nothing and return that one with ``False``.

        :class:`StoreError` if two rows share an id, or another process saved the same version number first."""
        ids = [r.id for r in rows]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise StoreError(f"A golden set cannot hold the same row id twice: {', '.join(twice[:5])}.")
        digest = rows_hash(rows)
        try:
            with self._write() as conn:
                latest = _latest(conn, name)
                if latest is not None and latest.content_hash == digest:
                    return latest, False
                version = 1 if latest is None else latest.version + 1
                record = GoldenSetRecord(
                    id=version_id(name, digest, version),
                    name=name,
                    version=version,
                    created_at=datetime.now(UTC),
                    content_hash=digest,
                    recipe=recipe,
                    n_rows=len(rows),
                    counts=tag_counts(rows),
                )
                conn.execute(golden_sets.insert(), [_set_row(record)])
                values = [
                    {"set_id": record.id, "position": i, "row_id": r.id, "payload": dumps(r.as_json())}
                    for i, r in enumerate(rows)
                ]
                for start in range(0, len(values), BATCH_SIZE):
                    conn.execute(golden_rows.insert(), values[start : start + BATCH_SIZE])
        except IntegrityError:
            raise StoreError(
                f"Golden set {name} got a new version from another process while this one was saved "
                f"(store at {self.url}). Fix: run the command again."
            ) from None
        return record, True

    def get_version(self, name: str, version: int | None = None) -> GoldenSetRecord | None:
        """Version ``version`` of ``name`` (the latest when ``None``); ``None`` if there is none."""
        with self._read() as conn:
            if version is None:
                return _latest(conn, name)
            query = select(golden_sets).where(golden_sets.c.name == name, golden_sets.c.version == version)
            row = conn.execute(query).first()
        return None if row is None else _record(row)

    def list_versions(self, name: str | None = None) -> list[GoldenSetRecord]:
        """Every version (of ``name``), by name then newest first."""
        query = select(golden_sets).order_by(golden_sets.c.name, golden_sets.c.version.desc())
        if name is not None:
            query = query.where(golden_sets.c.name == name)
        with self._read() as conn:
            return [_record(r) for r in conn.execute(query)]

    def load_rows(self, set_id: str) -> list[GoldenRow]:
        """The rows of a version, in their order."""
        query = (
            select(golden_rows.c.payload)
            .where(golden_rows.c.set_id == set_id)
            .order_by(golden_rows.c.position)
        )
        with self._read() as conn:
            return [GoldenRow.model_validate_json(p) for p in conn.execute(query).scalars()]


def _latest(conn: Connection, name: str) -> GoldenSetRecord | None:
    newest = select(func.max(golden_sets.c.version)).where(golden_sets.c.name == name).scalar_subquery()
    row = conn.execute(
        select(golden_sets).where(golden_sets.c.name == name, golden_sets.c.version == newest)
    ).first()
    return None if row is None else _record(row)


def _set_row(record: GoldenSetRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "version": record.version,
        "created_at": record.created_at,
        "content_hash": record.content_hash,
        "recipe": dumps(record.recipe),
        "counts": dumps(record.counts),
        "n_rows": record.n_rows,
    }


def _record(row: Row[Any]) -> GoldenSetRecord:
    return GoldenSetRecord(
        id=row.id,
        name=row.name,
        version=row.version,
        created_at=row.created_at,
        content_hash=row.content_hash,
        recipe=json.loads(row.recipe),
        counts=json.loads(row.counts),
        n_rows=row.n_rows,
    )
