"""Where a store lives, checked before opening it: commands that only read must not create an empty store."""

from __future__ import annotations

from pathlib import Path

from ragreplay.store.connect import StoreError, parse_store_url


def sqlite_file(url: str) -> Path | None:
    """The SQLite file ``url`` names, or ``None`` for PostgreSQL and in-memory stores."""
    engine_url, _ = parse_store_url(url)
    if engine_url.get_backend_name() != "sqlite" or not engine_url.database:
        return None
    return Path(engine_url.database)


def store_exists(url: str) -> bool:
    """False only for a SQLite file that does not exist (a server is taken to exist until it is reached)."""
    path = sqlite_file(url)
    return path is None or path.exists()


def require_existing_store(url: str) -> None:
    """Raise :class:`StoreError` naming the path and the fix when ``url`` is a SQLite file that does not exist.

    Opening a store creates it (and its folders), which is right for the commands that fill one (``ingest``,
    ``run``, ``demo``, ``shadow serve``...) and wrong for the ones that read: a mistyped ``--db`` would give an
    empty store and then an error about the run id. A PostgreSQL server is reached as it is.
    """
    if store_exists(url):
        return
    path = sqlite_file(url)
    raise StoreError(
        f"There is no store at {path} (from --db, $RAGREPLAY_DB or `db:` in ragreplay.yaml; the default is "
        "ragreplay.db in the current folder). Fix: check the path, or fill a store first with "
        f"`ragreplay ingest FILE --db {path}` (or `ragreplay demo`)."
    )
