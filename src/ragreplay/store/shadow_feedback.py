"""Live feedback in the store: one label per request id, the latest by time winning; read back by request."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select

from ragreplay.core.shadow import ShadowFeedback
from ragreplay.core.types import Feedback
from ragreplay.store import shadow_rollups as rollups
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import shadow_feedback, shadow_rows


class ShadowFeedbackRepository(StoreBase):
    """Writing feedback (last label wins, a replayed batch changes nothing) and reading it by request."""

    def write_shadow_feedback(self, items: Sequence[ShadowFeedback]) -> None:
        """Store ``items`` in one transaction. Per request id the label with the latest ``ts`` is kept, so
        writing the same batch twice, or an older label after a newer one, changes nothing."""
        latest: dict[str, ShadowFeedback] = {}
        for item in items:  # the same request twice in one batch: keep the later one
            seen = latest.get(item.request_id)
            if seen is None or item.ts >= seen.ts:
                latest[item.request_id] = item
        if not latest:
            return
        stmt = self._insert(shadow_feedback)
        stmt = stmt.on_conflict_do_update(
            index_elements=["request_id"],
            set_={c.name: stmt.excluded[c.name] for c in shadow_feedback.columns if c.name != "request_id"},
            where=shadow_feedback.c.ts <= stmt.excluded.ts,
        )
        with self._write() as conn:
            before = rollups.feedback_labels(conn, latest, lock=True)
            conn.execute(stmt, [_values(item) for item in latest.values()])
            rollups.after_feedback(conn, before, latest)

    def shadow_feedback_for(self, request_ids: Iterable[str]) -> dict[str, ShadowFeedback]:
        """The stored feedback of each of ``request_ids`` that has any."""
        found: dict[str, ShadowFeedback] = {}
        with self._read() as conn:
            for part in chunked(list(dict.fromkeys(request_ids))):
                query = select(shadow_feedback).where(shadow_feedback.c.request_id.in_(part))
                found.update((r.request_id, _feedback(r)) for r in conn.execute(query))
        return found

    def count_shadow_feedback(self, since: datetime | None = None) -> tuple[int, int]:
        """(labels with ``ts >= since``, of which on requests that have a shadow row)."""
        total = select(func.count()).select_from(shadow_feedback)
        matched = select(func.count(func.distinct(shadow_feedback.c.request_id))).select_from(
            shadow_feedback.join(shadow_rows, shadow_rows.c.request_id == shadow_feedback.c.request_id)
        )
        if since is not None:
            total = total.where(shadow_feedback.c.ts >= since)
            matched = matched.where(shadow_feedback.c.ts >= since)
        with self._read() as conn:
            return int(conn.execute(total).scalar_one()), int(conn.execute(matched).scalar_one())


def _values(item: ShadowFeedback) -> dict[str, Any]:
    return {
        "request_id": item.request_id,
        "ts": item.ts,
        "feedback": item.feedback.value,
        "comment": item.comment,
        "source": item.source,
    }


def _feedback(r: Row[Any]) -> ShadowFeedback:
    return ShadowFeedback(
        request_id=r.request_id,
        ts=r.ts,
        feedback=Feedback(r.feedback),
        comment=r.comment,
        source=r.source,
    )
