"""Comparisons (champion vs challengers) and their per-case rows, saved as each case finishes.

The store keeps a row's payload as opaque JSON: what a row holds is the compare layer's business (the records
are ``core.comparisons``'s).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, func, select, update

from ragreplay.core.comparisons import ComparisonRecord, ComparisonRowRecord
from ragreplay.core.runs import RunStatus
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked, unique_by_prefix
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import (
    cases,
    comparison_rows,
    comparisons,
    dumps,
    status_config_record,
    status_config_row,
)

_UNFINISHED = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)


class ComparisonsRepository(StoreBase):
    """Creating comparisons, tracking their status and saving each case's rows as it completes."""

    def create_comparison(self, record: ComparisonRecord) -> None:
        """Store a new comparison; :class:`StoreError` if its id is taken."""
        with self._write() as conn:
            if conn.execute(select(comparisons.c.id).where(comparisons.c.id == record.id)).first():
                raise StoreError(
                    f"A comparison with id {record.id!r} already exists in the store at {self.url}."
                )
            conn.execute(comparisons.insert(), [status_config_row(record)])

    def get_comparison(self, id_or_prefix: str) -> ComparisonRecord | None:
        """The comparison with this id or unique id prefix; ``StoreError`` if the prefix is ambiguous."""
        with self._read() as conn:
            found = unique_by_prefix(conn, comparisons.c.id, id_or_prefix, "comparison")
            if found is None:
                return None
            return status_config_record(
                ComparisonRecord, conn.execute(select(comparisons).where(comparisons.c.id == found)).one()
            )

    def list_comparisons(self, limit: int | None = None) -> list[ComparisonRecord]:
        """Comparisons, newest first, at most ``limit`` of them."""
        query = (
            select(comparisons)
            .order_by(comparisons.c.created_at.desc(), comparisons.c.id.desc())
            .limit(limit)
        )
        with self._read() as conn:
            return [status_config_record(ComparisonRecord, r) for r in conn.execute(query)]

    def find_comparison(
        self, config_hash: str, dataset_hash: str, unfinished_only: bool = False
    ) -> ComparisonRecord | None:
        """The newest comparison of this configuration on this dataset (only ``running`` or
        ``interrupted`` ones with ``unfinished_only``)."""
        query = select(comparisons).where(
            comparisons.c.config_hash == config_hash, comparisons.c.dataset_hash == dataset_hash
        )
        if unfinished_only:
            query = query.where(comparisons.c.status.in_(_UNFINISHED))
        query = query.order_by(comparisons.c.created_at.desc(), comparisons.c.id.desc()).limit(1)
        with self._read() as conn:
            row = conn.execute(query).first()
        return None if row is None else status_config_record(ComparisonRecord, row)

    def find_unfinished_comparison(self, config_hash: str, dataset_hash: str) -> ComparisonRecord | None:
        """The newest ``running`` or ``interrupted`` comparison of this configuration on this dataset."""
        return self.find_comparison(config_hash, dataset_hash, unfinished_only=True)

    def set_comparison_status(
        self, comparison_id: str, status: RunStatus, finished_at: datetime | None = None
    ) -> None:
        """Set a comparison's status and ``finished_at`` (``None`` clears it, e.g. when it resumes)."""
        with self._write() as conn:
            done = conn.execute(
                update(comparisons)
                .where(comparisons.c.id == comparison_id)
                .values(status=status.value, finished_at=finished_at)
            )
            if done.rowcount == 0:
                raise StoreError(
                    f"There is no comparison {comparison_id!r} in the store at {self.url}. "
                    "Fix: pick an id from `ragreplay comparisons`."
                )

    def save_comparison_rows(self, rows: Sequence[ComparisonRowRecord]) -> None:
        """Insert or replace rows, keyed by (comparison, case, challenger), in one transaction."""
        with self._write() as conn:
            self.put_comparison_rows(conn, rows)

    def put_comparison_rows(self, conn: Connection, rows: Sequence[ComparisonRowRecord]) -> None:
        """Insert or replace rows inside the caller's transaction ``conn``."""
        now = datetime.now(UTC)
        unique = {
            (r.comparison_id, r.case_id, r.challenger): {
                "comparison_id": r.comparison_id,
                "case_id": r.case_id,
                "challenger": r.challenger,
                "payload": dumps(r.payload),
                "updated_at": now,
            }
            for r in rows
        }
        values = list(unique.values())
        if not values:
            return
        stmt = self._upsert(comparison_rows, ["comparison_id", "case_id", "challenger"])
        for start in range(0, len(values), BATCH_SIZE):
            conn.execute(stmt, values[start : start + BATCH_SIZE])

    def save_comparison_row(self, row: ComparisonRowRecord) -> None:
        """Insert or replace one row."""
        self.save_comparison_rows([row])

    def load_comparison_rows(
        self, comparison_id: str, case_ids: Sequence[str] | None = None
    ) -> list[ComparisonRowRecord]:
        """A comparison's rows (only those of ``case_ids`` when given), ordered by case (conversation,
        turn) then challenger; rows whose case is not in the store come last, by case id."""
        base = (
            select(comparison_rows)
            .select_from(comparison_rows.outerjoin(cases, cases.c.id == comparison_rows.c.case_id))
            .where(comparison_rows.c.comparison_id == comparison_id)
            .order_by(
                cases.c.conversation_id.asc().nulls_last(),
                cases.c.turn_index.asc().nulls_last(),
                comparison_rows.c.case_id,
                comparison_rows.c.challenger,
            )
        )
        with self._read() as conn:
            if case_ids is None:
                return [_row(r) for r in conn.execute(base)]
            found: list[ComparisonRowRecord] = []
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                found += [_row(r) for r in conn.execute(base.where(comparison_rows.c.case_id.in_(chunk)))]
            return found

    def comparison_row_keys(self, comparison_id: str) -> set[tuple[str, str]]:
        """The (case id, challenger) pairs a comparison has rows for, without loading the payloads."""
        query = select(comparison_rows.c.case_id, comparison_rows.c.challenger).where(
            comparison_rows.c.comparison_id == comparison_id
        )
        with self._read() as conn:
            return {(case_id, challenger) for case_id, challenger in conn.execute(query)}

    def compared_case_counts(self, comparison_ids: Sequence[str]) -> dict[str, int]:
        """How many distinct cases each comparison has rows for (comparisons with none are left out)."""
        counts: dict[str, int] = {}
        with self._read() as conn:
            for chunk in chunked(list(dict.fromkeys(comparison_ids))):
                query = (
                    select(comparison_rows.c.comparison_id, func.count(comparison_rows.c.case_id.distinct()))
                    .where(comparison_rows.c.comparison_id.in_(chunk))
                    .group_by(comparison_rows.c.comparison_id)
                )
                counts.update({cid: int(n) for cid, n in conn.execute(query)})
        return counts


def _row(row: Row[Any]) -> ComparisonRowRecord:
    return ComparisonRowRecord(
        comparison_id=row.comparison_id,
        case_id=row.case_id,
        challenger=row.challenger,
        payload=json.loads(row.payload),
    )
