"""First-writer-wins records: the rewrite pinned to each case, and the model-call cache."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select

from ragreplay.core.types import Rewrite
from ragreplay.store.base import StoreBase, chunked
from ragreplay.store.schema import dumps, llm_cache, rewrites, to_json


class CacheMixin(StoreBase):
    """Pinned rewrites and cached model responses; both keep the first value stored under a key."""

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

    def cache_get(self, key: str) -> Mapping[str, Any] | None:
        """The cached response stored under ``key``, or ``None``."""
        with self._read() as conn:
            data = conn.execute(select(llm_cache.c.response).where(llm_cache.c.key == key)).scalar()
        if data is None:
            return None
        response: dict[str, Any] = json.loads(data)
        return response

    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        """Cache a response under ``key`` (a single statement; an existing entry is kept)."""
        row = {
            "key": key,
            "model": model,
            "request": dumps(dict(request)),
            "response": dumps(dict(response)),
            "created_at": datetime.now(UTC),
        }
        with self._write() as conn:
            conn.execute(self._insert_ignore(llm_cache, ["key"]), [row])

    def cache_count(self) -> int:
        """How many responses are cached."""
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(llm_cache)).scalar_one())
