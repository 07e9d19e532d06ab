"""Persistence: SQLite by default, PostgreSQL for teams, with ordered schema migrations."""

from ragreplay.store.connect import StoreError, StoreUnavailable
from ragreplay.store.store import Store

__all__ = ["Store", "StoreError", "StoreUnavailable"]
