"""Shadow rows in the store, on SQLite and PostgreSQL: idempotent batch writes, ordered paged reads, judging marks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowAnswer, ShadowRow
from ragreplay.core.types import TokenUsage
from ragreplay.store import Store

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def row(i: int, at: datetime = T0, challenger: str = "b") -> ShadowRow:
    return make_shadow_row(
        id=f"row{i:04d}",
        ts=at,
        request_id=f"req{i}",
        query=f"vraag {i} — héllo ✓",
        user_hash="ab" * 32 if i % 2 else None,
        tags={"department": "hr"},
        challenger=challenger,
        champion_answer=ShadowAnswer(text="old", chunk_ids=["doc1#2"], latency_ms=12.5, cost_usd=0.001),
        challenger_answer=ShadowAnswer(
            text="new", chunk_ids=["doc9#1", "doc1#2"], tokens=TokenUsage(input=900, output=60), error=None
        ),
    )


def test_write_is_idempotent_on_id_and_rows_read_back_equal(store: Store) -> None:
    rows = [row(i, T0 + timedelta(seconds=i)) for i in range(5)]
    store.shadow_rows.write_shadow_rows(rows)
    store.shadow_rows.write_shadow_rows(
        [*rows[2:], row(5, T0 + timedelta(seconds=5))]
    )  # a retried batch plus one new
    store.shadow_rows.write_shadow_rows([])
    assert store.shadow_rows.count_shadow_rows() == 6
    back = list(store.shadow_rows.iter_shadow_rows())
    assert back[:5] == rows
    assert back[0].ts.tzinfo is not None
    failed = ShadowRow(
        request_id="r",
        query="q",
        challenger="c",
        champion_answer=ShadowAnswer(text="x"),
        challenger_answer=ShadowAnswer.failed("timeout after 30 s", latency_ms=30000.0),
    )
    store.shadow_rows.write_shadow_rows([failed])
    assert [r for r in store.shadow_rows.iter_shadow_rows() if r.id == failed.id] == [failed]


def test_iter_orders_by_ts_then_id_pages_and_filters(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ragreplay.store.shadow.BATCH_SIZE", 3)  # several pages, with ts ties across pages
    same = T0 + timedelta(minutes=1)
    rows = [row(i, same if i in (3, 4, 5, 6) else T0 + timedelta(minutes=i)) for i in range(10)]
    store.shadow_rows.write_shadow_rows(list(reversed(rows)))
    ordered = [r.id for r in sorted(rows, key=lambda r: (r.ts, r.id))]
    assert [r.id for r in store.shadow_rows.iter_shadow_rows()] == ordered
    since = T0 + timedelta(minutes=5)
    assert [r.id for r in store.shadow_rows.iter_shadow_rows(since=since)] == [
        r.id for r in sorted(rows, key=lambda r: (r.ts, r.id)) if r.ts >= since
    ]
    assert [r.id for r in store.shadow_rows.iter_shadow_rows(limit=4)] == ordered[:4]
    assert [r.id for r in store.shadow_rows.iter_shadow_rows(limit=7)] == ordered[:7]
    assert list(store.shadow_rows.iter_shadow_rows(limit=0)) == []


def test_mark_judged_and_iterate_unjudged_only(store: Store) -> None:
    rows = [row(i, T0 + timedelta(seconds=i)) for i in range(6)]
    store.shadow_rows.write_shadow_rows(rows)
    assert store.shadow_rows.mark_shadow_judged([rows[0].id, rows[3].id, "nope"], T0 + timedelta(days=1)) == 2
    assert store.shadow_rows.count_shadow_rows(unjudged_only=True) == 4
    assert [r.id for r in store.shadow_rows.iter_shadow_rows(unjudged_only=True)] == [
        rows[i].id for i in (1, 2, 4, 5)
    ]
    assert store.shadow_rows.count_shadow_rows() == 6
    assert store.shadow_rows.mark_shadow_judged([], T0) == 0
    store.shadow_rows.write_shadow_rows([rows[0]])  # a retried write does not clear the judged mark
    assert store.shadow_rows.count_shadow_rows(unjudged_only=True) == 4


def test_many_rows_in_one_batch(store: Store) -> None:
    rows = [row(i, T0 + timedelta(milliseconds=i), challenger="a" if i % 2 else "b") for i in range(1500)]
    store.shadow_rows.write_shadow_rows(rows)
    assert store.shadow_rows.count_shadow_rows() == 1500
    assert store.shadow_rows.mark_shadow_judged([r.id for r in rows[:1200]], T0) == 1200
    assert sum(1 for _ in store.shadow_rows.iter_shadow_rows(unjudged_only=True)) == 300


def test_chunk_texts_round_trip_and_rows_without_them_read_back(store: Store) -> None:
    texts: list[str | None] = ["Verlof: 25 dagen — héllo ✓ <b>", None, "x" * 2000]
    side = ShadowAnswer(text="new", chunk_ids=["d#1", "d#2", "d#3", "d#4"], chunk_texts=texts)
    with_texts = make_shadow_row(id="texts", ts=T0, challenger_answer=side)
    store.shadow_rows.write_shadow_rows([with_texts, row(1)])
    back = {r.id: r for r in store.shadow_rows.iter_shadow_rows()}
    assert back["texts"] == with_texts
    assert [c.text for c in back["texts"].challenger_answer.chunks()] == [*texts, None]
    assert back["row0001"].challenger_answer.chunk_texts == []
