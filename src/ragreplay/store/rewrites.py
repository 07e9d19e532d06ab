"""The standalone question pinned to each case, per rewriter version: rewritten once, replayed the same way by
every later run with that rewriter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import delete, select

from ragreplay.core.types import Rewrite
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import rewrites, to_json


class RewritesRepository(StoreBase):
    """Pinned rewrites; the first rewrite a rewriter (``name@prompt_version``) pins to a case is kept."""

    def get_rewrite(self, case_id: str, rewriter: str | None = None) -> Rewrite | None:
        """The rewrite ``rewriter`` pinned to a case (with ``None``: the first pinned by any), if any."""
        return self.get_rewrites([case_id], rewriter).get(case_id)

    def get_rewrites(self, case_ids: Sequence[str], rewriter: str | None = None) -> dict[str, Rewrite]:
        """The rewrites pinned to any of ``case_ids`` by ``rewriter`` (with ``None``: each case's first pin,
        by any rewriter), by case id (one query per 500 ids)."""
        found: dict[str, Rewrite] = {}
        with self._read() as conn:
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                query = select(rewrites.c.case_id, rewrites.c.data).where(rewrites.c.case_id.in_(chunk))
                if rewriter is not None:
                    query = query.where(rewrites.c.rewriter == rewriter)
                query = query.order_by(rewrites.c.pinned_at.desc(), rewrites.c.rewriter.desc())
                for case_id, data in conn.execute(query):  # newest first: the first pin is set last
                    found[case_id] = Rewrite.model_validate_json(data)
        return found

    def pin_rewrite(self, case_id: str, rewrite: Rewrite, rewriter: str) -> Rewrite:
        """Pin ``rewrite`` to a case for ``rewriter`` unless it pinned one already; return the pinned one.

        Every later run with that rewriter replays the same standalone question, so runs stay comparable.
        """
        row = {
            "case_id": case_id,
            "rewriter": rewriter,
            "data": to_json(rewrite),
            "pinned_at": datetime.now(UTC),
        }
        with self._write() as conn:
            conn.execute(self._insert_ignore(rewrites, ["case_id", "rewriter"]), [row])
            data = conn.execute(
                select(rewrites.c.data).where(rewrites.c.case_id == case_id, rewrites.c.rewriter == rewriter)
            ).scalar_one()
        return Rewrite.model_validate_json(data)

    def unpin_rewrites(self, case_ids: Sequence[str] | None = None) -> int:
        """Forget the rewrites pinned to ``case_ids`` (all if ``None``) by every rewriter; returns how many
        were removed."""
        removed = 0
        with self._write() as conn:
            if case_ids is None:
                return int(conn.execute(delete(rewrites)).rowcount)
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                removed += conn.execute(delete(rewrites).where(rewrites.c.case_id.in_(chunk))).rowcount
        return removed
