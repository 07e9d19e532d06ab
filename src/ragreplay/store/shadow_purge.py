"""Retention for the shadow log: deleting old live traffic (rows, their judgments, unmatched feedback).

Every delete is one set-based statement with a single bound value (the cutoff): no ids travel through Python,
so no backend's limit on bound variables applies, however large the tables. The three run in one transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Delete, Select, and_, delete, exists, func, select
from sqlalchemy.engine.interfaces import DBAPICursor

from ragreplay.store import shadow_rollups as rollups
from ragreplay.store.base import StoreBase
from ragreplay.store.connect import StoreError
from ragreplay.store.schema import shadow_feedback, shadow_judgments, shadow_rows


@dataclass(frozen=True)
class PurgeCounts:
    """How many shadow rows, judgments and feedback labels a purge deletes (or would delete)."""

    rows: int = 0
    judgments: int = 0
    feedback: int = 0

    @property
    def total(self) -> int:
        """All three together."""
        return self.rows + self.judgments + self.feedback


@dataclass(frozen=True)
class SpaceReclaimed:
    """The SQLite file's size (page count x page size) before and after ``VACUUM``, in bytes."""

    before: int
    after: int


def _old_rows(cutoff: datetime) -> Select[Any]:
    return select(shadow_rows.c.id).where(shadow_rows.c.ts < cutoff)


def _feedback_gone(cutoff: datetime) -> ColumnElement[bool]:
    # Feedback of a request that keeps a row (one with ts >= cutoff) stays, whatever its own age: it still
    # labels data the report reads. The predicate holds before and after the rows' delete alike.
    kept_row = exists().where(
        shadow_rows.c.request_id == shadow_feedback.c.request_id, shadow_rows.c.ts >= cutoff
    )
    return and_(shadow_feedback.c.ts < cutoff, ~kept_row)


def _count(conn: Connection, query: Select[Any]) -> int:
    return int(conn.execute(query).scalar_one())


class ShadowPurgeRepository(StoreBase):
    """Counting and deleting shadow data older than a cutoff, and returning SQLite's freed space."""

    def count_shadow_purge(self, cutoff: datetime) -> PurgeCounts:
        """What :meth:`purge_shadow_before` would delete now, read without writing or locking writers."""
        with self._read() as conn:
            return PurgeCounts(
                rows=_count(
                    conn, select(func.count()).select_from(shadow_rows).where(shadow_rows.c.ts < cutoff)
                ),
                judgments=_count(
                    conn,
                    select(func.count())
                    .select_from(shadow_judgments)
                    .where(shadow_judgments.c.row_id.in_(_old_rows(cutoff))),
                ),
                feedback=_count(
                    conn, select(func.count()).select_from(shadow_feedback).where(_feedback_gone(cutoff))
                ),
            )

    def purge_shadow_before(self, cutoff: datetime) -> PurgeCounts:
        """Delete the shadow rows with ``ts < cutoff``, their judgments, and the feedback with ``ts < cutoff``
        whose request has no shadow row left, all in one transaction with the rollups' update (the hours before
        the cutoff's dropped, the cutoff's own rebuilt): an error anywhere deletes nothing."""
        with self._write() as conn:
            judgments = self._purge_shadow_judgments(conn, cutoff)
            rows = self._purge_shadow_rows(conn, cutoff)
            feedback = self._purge_shadow_feedback(conn, cutoff)
            rollups.after_purge(conn, cutoff)
        return PurgeCounts(rows=rows, judgments=judgments, feedback=feedback)

    def _purge_shadow_judgments(self, conn: Connection, cutoff: datetime) -> int:
        """Delete the judgments of rows with ``ts < cutoff`` (before the rows: they are found through them)."""
        return _deleted(
            conn, delete(shadow_judgments).where(shadow_judgments.c.row_id.in_(_old_rows(cutoff)))
        )

    def _purge_shadow_rows(self, conn: Connection, cutoff: datetime) -> int:
        """Delete the rows with ``ts < cutoff``."""
        return _deleted(conn, delete(shadow_rows).where(shadow_rows.c.ts < cutoff))

    def _purge_shadow_feedback(self, conn: Connection, cutoff: datetime) -> int:
        """Delete the labels with ``ts < cutoff`` whose request has no row with ``ts >= cutoff``."""
        return _deleted(conn, delete(shadow_feedback).where(_feedback_gone(cutoff)))

    def reclaim_space(self) -> SpaceReclaimed | None:
        """On SQLite, ``VACUUM`` (rewrite the file without its free pages) and checkpoint the WAL so the file
        shrinks on disk; ``None`` on PostgreSQL, where autovacuum makes deleted rows' space reusable.

        ``VACUUM`` needs no other connection writing meanwhile and temporarily up to twice the file's size.
        """
        if self._engine.dialect.name != "sqlite":
            return None
        with self._engine.connect() as conn:
            # VACUUM cannot run inside a transaction, and the engine's "begin" hook opens one on any
            # statement: go through the DBAPI connection, which runs in autocommit mode (see connect.py).
            raw = conn.connection.dbapi_connection
            assert raw is not None
            cursor = raw.cursor()
            try:
                before = _sqlite_size(cursor)
                cursor.execute("VACUUM")
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                after = _sqlite_size(cursor)
            except sqlite3.OperationalError as exc:
                raise StoreError(
                    f"VACUUM of the store at {self.url} failed: {exc}. Fix: stop the processes writing to it "
                    "(e.g. `ragreplay shadow serve`) and run VACUUM again (`sqlite3 FILE VACUUM`)."
                ) from exc
            finally:
                cursor.close()
        return SpaceReclaimed(before=before, after=after)


def _deleted(conn: Connection, statement: Delete) -> int:
    return int(conn.execute(statement).rowcount)


def _sqlite_size(cursor: DBAPICursor) -> int:
    sizes = []
    for pragma in ("page_count", "page_size"):
        cursor.execute(f"PRAGMA {pragma}")
        row = cursor.fetchone()
        assert row is not None
        sizes.append(int(row[0]))
    return sizes[0] * sizes[1]
