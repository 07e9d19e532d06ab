"""The reads that must not scan the shadow log have an index on PostgreSQL: each query's plan, with sequential
scans priced out (``enable_seqscan = off``, so the planner takes an index whenever one can serve), reads its
table through an index. A query no index can serve still shows a sequential scan, and fails here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Select, select, text

from ragreplay.store import Store
from ragreplay.store.schema import eval_rows, shadow_feedback, shadow_rows, work_claims
from ragreplay.store.shadow_window import _window

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _plan(store: Store, query: Select[Any]) -> str:
    engine = store.shadow_rows._engine
    compiled = query.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as conn:
        conn.execute(text("SET enable_seqscan = off"))
        return "\n".join(row[0] for row in conn.execute(text(f"EXPLAIN {compiled}")))


QUERIES = {
    "the regression set's window, by time": lambda: _window(NOW - timedelta(days=7), NOW),
    "rows read again by id": lambda: _window(None, None).where(shadow_rows.c.id.in_(["r1", "r2"])),
    "a request's rows (feedback, judging)": lambda: select(shadow_rows.c.id).where(
        shadow_rows.c.request_id.in_(["q1", "q2"])
    ),
    "unjudged rows after a cursor (shadow judge, claims)": lambda: (
        select(shadow_rows.c.id)
        .where(shadow_rows.c.judged_at.is_(None), shadow_rows.c.ts >= NOW - timedelta(days=7))
        .order_by(shadow_rows.c.ts, shadow_rows.c.id)
        .limit(100)
    ),
    "labels of requests": lambda: select(shadow_feedback).where(shadow_feedback.c.request_id.in_(["q1"])),
    "expired claims of a queue": lambda: select(work_claims.c.item_id).where(
        work_claims.c.queue == "shadow", work_claims.c.lease_until < 1.0
    ),
    "an eval run's rows not scored after a cursor (eval --workers, claims)": lambda: (
        select(eval_rows.c.row_id)
        .where(eval_rows.c.eval_id == "e1", eval_rows.c.error.is_(True), eval_rows.c.row_id > "r1")
        .order_by(eval_rows.c.row_id)
        .limit(100)
    ),
}


@pytest.mark.parametrize("what", list(QUERIES))
def test_the_query_reads_through_an_index(store: Store, what: str) -> None:
    if store.shadow_rows._engine.dialect.name != "postgresql":
        pytest.skip("query plans are checked on PostgreSQL (SQLite plans are simpler: one index per table)")
    plan = _plan(store, QUERIES[what]())
    assert "Seq Scan" not in plan, f"{what}:\n{plan}"
    assert "Index" in plan, plan
