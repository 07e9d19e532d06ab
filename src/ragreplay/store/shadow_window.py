"""The shadow rows of a time window as the regression-set build reads them: one lean, streamed pass.

Each row comes with its judgment and its request's feedback joined in the database (outer joins), and only the
columns a candidate needs (not the challenger's answer, not the user hash), read with a server-side cursor on
PostgreSQL and in batches on SQLite: memory stays flat whatever the window holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select

from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked
from ragreplay.store.schema import shadow_feedback, shadow_judgments, shadow_rows


@dataclass(frozen=True, slots=True)
class WindowRow:
    """One shadow row with what its judgment and its request's feedback say (JSON columns left as text)."""

    id: str
    ts: datetime
    request_id: str
    challenger: str
    query: str
    tags: str
    champion_answer: str
    judged: bool
    fit: str | None
    winner: str | None
    consistent: bool | None
    error: str | None
    payload: str | None
    feedback: str | None


def _window(since: datetime | None, until: datetime | None) -> Select[Any]:
    query = (
        select(
            shadow_rows.c.id,
            shadow_rows.c.ts,
            shadow_rows.c.request_id,
            shadow_rows.c.challenger,
            shadow_rows.c.query,
            shadow_rows.c.tags,
            shadow_rows.c.champion_answer,
            shadow_judgments.c.row_id,
            shadow_judgments.c.fit,
            shadow_judgments.c.winner,
            shadow_judgments.c.consistent,
            shadow_judgments.c.error,
            shadow_judgments.c.payload,
            shadow_feedback.c.feedback,
        )
        .outerjoin(shadow_judgments, shadow_judgments.c.row_id == shadow_rows.c.id)
        .outerjoin(shadow_feedback, shadow_feedback.c.request_id == shadow_rows.c.request_id)
        .order_by(shadow_rows.c.ts, shadow_rows.c.id)
    )
    if since is not None:
        query = query.where(shadow_rows.c.ts >= since)
    if until is not None:
        query = query.where(shadow_rows.c.ts < until)
    return query


def _row(r: Sequence[Any]) -> WindowRow:
    (row_id, ts, request_id, challenger, query, tags, champion, judged_id, fit, winner, consistent) = r[:11]
    error, payload, feedback = r[11:]
    return WindowRow(
        id=row_id,
        ts=ts,
        request_id=request_id,
        challenger=challenger,
        query=query,
        tags=tags,
        champion_answer=champion,
        judged=judged_id is not None,
        fit=fit,
        winner=winner,
        consistent=consistent,
        error=error,
        payload=payload,
        feedback=feedback,
    )


class ShadowWindowRepository(StoreBase):
    """Reading a window of the shadow log for the regression set: streamed, or a few rows by id."""

    def iter_window(self, since: datetime | None, until: datetime | None) -> Iterator[WindowRow]:
        """Every row with ``since <= ts < until`` (either bound ``None``: open), oldest first (ties by id),
        with its judgment and feedback; streamed from one read transaction."""
        with self._read() as conn:
            for r in conn.execution_options(yield_per=BATCH_SIZE).execute(_window(since, until)):
                yield _row(r)

    def window_rows(self, ids: Sequence[str]) -> dict[str, WindowRow]:
        """The rows of ``ids`` that exist (any time), by id."""
        found: dict[str, WindowRow] = {}
        with self._read() as conn:
            for part in chunked(list(dict.fromkeys(ids))):
                query = _window(None, None).where(shadow_rows.c.id.in_(part))
                found.update((row.id, row) for row in map(_row, conn.execute(query)))
        return found
