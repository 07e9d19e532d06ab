"""The standalone question pinned to each case: rewritten once, replayed the same way by every later run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import delete, select

from ragreplay.core.types import Rewrite
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import rewrites, to_json


class RewritesRepository(StoreBase):
    """Pinned rewrites; the first rewrite pinned to a case is kept."""

    def get_rewrite(self, case_id: str) -> Rewrite | None:
        """The rewrite pinned to a case, if any."""
        with self._read() as conn:
            data = conn.execute(select(rewrites.c.data).where(rewrites.c.case_id == case_id)).scalar()
        return None if data is None else Rewrite.model_validate_json(data)

    def get_rewrites(self, case_ids: Sequence[str]) -> dict[str, Rewrite]:
        """The rewrites pinned to any of ``case_ids``, by case id (one query per 500 ids)."""
        found: dict[str, Rewrite] = {}
        with self._read() as conn:
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                query = select(rewrites.c.case_id, rewrites.c.data).where(rewrites.c.case_id.in_(chunk))
                for case_id, data in conn.execute(query):
                    found[case_id] = Rewrite.model_validate_json(data)
        return found

    def pin_rewrite(self, case_id: str, rewrite: Rewrite) -> Rewrite:
        """Pin ``rewrite`` to a case unless one is pinned already; return the pinned one.

        Every later run replays the same standalone question, so runs stay comparable.
        """
        row = {"case_id": case_id, "data": to_json(rewrite), "pinned_at": datetime.now(UTC)}
        with self._write() as conn:
            conn.execute(self._insert_ignore(rewrites, ["case_id"]), [row])
            data = conn.execute(select(rewrites.c.data).where(rewrites.c.case_id == case_id)).scalar_one()
        return Rewrite.model_validate_json(data)

    def unpin_rewrites(self, case_ids: Sequence[str] | None = None) -> int:
        """Forget the rewrites pinned to ``case_ids`` (all if ``None``); returns how many were removed."""
        removed = 0
        with self._write() as conn:
            if case_ids is None:
                return int(conn.execute(delete(rewrites)).rowcount)
            for chunk in chunked(list(dict.fromkeys(case_ids))):
                removed += conn.execute(delete(rewrites).where(rewrites.c.case_id.in_(chunk))).rowcount
        return removed
