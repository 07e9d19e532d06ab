"""Calibration history: each judge version's agreement with reviewers, as computed at a time.

Every calibration computation (``ragreplay calibration``, a re-judge) appends one snapshot per judge version it
measured, unless the figures equal that version's latest snapshot (nothing changed, nothing added), so the
history shows how agreement moved as labels came in and as the judge changed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, Row, select

from ragreplay.store.base import StoreBase
from ragreplay.store.schema import calibration_history, dumps


class CalibrationSnapshot(BaseModel):
    """One judge version's agreement with reviewers on the winner at ``computed_at``: ``n`` labels, ``agree``
    of them agreeing, the rate with its 95% Wilson bounds, Cohen's kappa, the alert status, and the per-tag
    figures (each ``{"label", "n", "agree", "rate", "low", "high", "kappa", "status"}``). ``source`` names the
    computation (``calibration`` or ``rejudge``); ``since`` the reviews' window (``None``: every review)."""

    model_config = ConfigDict(frozen=True)

    judge_version: str
    judge: str
    computed_at: datetime
    source: str
    since: datetime | None = None
    n: int
    agree: int
    agreement: float | None
    low: float
    high: float
    kappa: float | None
    status: str
    per_tag: list[dict[str, Any]] = []

    def same_figures(self, other: CalibrationSnapshot) -> bool:
        """Whether ``other`` has the same figures for the same version (time, source and window aside: a
        moving window that measures the same labels adds nothing)."""
        skip = {"computed_at", "source", "since"}
        return self.model_dump(exclude=skip) == other.model_dump(exclude=skip)


class CalibrationHistoryRepository(StoreBase):
    """Appending calibration snapshots and reading the history back."""

    def record(self, snapshots: Sequence[CalibrationSnapshot]) -> list[CalibrationSnapshot]:
        """Append each snapshot whose figures differ from its version's latest one; returns those appended."""
        added = []
        with self._write() as conn:
            for snap in snapshots:
                latest = self._latest(conn, snap.judge_version)
                if latest is not None and latest.same_figures(snap):
                    continue
                row = snap.model_dump(exclude={"per_tag"})
                conn.execute(calibration_history.insert(), [{**row, "per_tag": dumps(snap.per_tag)}])
                added.append(snap)
        return added

    def latest(self, judge_version: str) -> CalibrationSnapshot | None:
        """The newest snapshot of ``judge_version``."""
        with self._read() as conn:
            return self._latest(conn, judge_version)

    def list_history(
        self, judge_version: str | None = None, limit: int | None = None
    ) -> list[CalibrationSnapshot]:
        """Snapshots (of ``judge_version``, all when ``None``), newest first, at most ``limit``."""
        query = select(calibration_history).order_by(
            calibration_history.c.computed_at.desc(), calibration_history.c.id.desc()
        )
        if judge_version is not None:
            query = query.where(calibration_history.c.judge_version == judge_version)
        if limit is not None:
            query = query.limit(limit)
        with self._read() as conn:
            return [_snapshot(r) for r in conn.execute(query)]

    def _latest(self, conn: Connection, judge_version: str) -> CalibrationSnapshot | None:
        query = (
            select(calibration_history)
            .where(calibration_history.c.judge_version == judge_version)
            .order_by(calibration_history.c.computed_at.desc(), calibration_history.c.id.desc())
            .limit(1)
        )
        found = conn.execute(query).first()
        return None if found is None else _snapshot(found)


def _snapshot(row: Row[Any]) -> CalibrationSnapshot:
    data = dict(row._mapping)
    data.pop("id", None)
    data["per_tag"] = json.loads(data["per_tag"])
    return CalibrationSnapshot.model_validate(data)
