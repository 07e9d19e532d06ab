"""Secrets the store keeps for its writers: made once, then the same for every process that shares the store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select

from ragreplay.store.base import StoreBase
from ragreplay.store.schema import store_secrets


class SecretsRepository(StoreBase):
    """Named secrets; the first value stored under a name is kept (replicas racing to create one agree)."""

    def get_or_create(self, name: str, make: Callable[[], str]) -> tuple[str, bool]:
        """The secret ``name``, made with ``make()`` and stored when there is none yet; and whether this call
        made it."""
        with self._read() as conn:
            found = conn.execute(select(store_secrets.c.value).where(store_secrets.c.name == name)).scalar()
        if found is not None:
            return str(found), False
        value = make()
        row = {"name": name, "value": value, "created_at": datetime.now(UTC)}
        with self._write() as conn:
            conn.execute(self._insert_ignore(store_secrets, ["name"]), [row])
            kept = conn.execute(
                select(store_secrets.c.value).where(store_secrets.c.name == name)
            ).scalar_one()
        return str(kept), kept == value
