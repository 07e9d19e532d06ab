"""The model-call cache: responses stored under a content hash of the request, first writer wins."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from ragreplay.store.base import StoreBase
from ragreplay.store.schema import dumps, llm_cache


class CacheRepository(StoreBase):
    """Cached model responses; the first response stored under a key is kept."""

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
            "request": dumps(request),
            "response": dumps(response),
            "created_at": datetime.now(UTC),
        }
        with self._write() as conn:
            conn.execute(self._insert_ignore(llm_cache, ["key"]), [row])

    def iter_keys(self) -> Iterator[str]:
        """Every cached key, streamed (only the key column is read: an index-only scan)."""
        with self._read() as conn:
            yield from conn.execute(select(llm_cache.c.key).execution_options(yield_per=5000)).scalars()

    def cache_count(self) -> int:
        """How many responses are cached."""
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(llm_cache)).scalar_one())
