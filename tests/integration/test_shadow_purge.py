"""Purging old shadow data in the store, on SQLite and PostgreSQL: what goes and what stays at the cutoff,
judgments with their rows, feedback kept while its request keeps a row, dry-run counts, all-or-nothing, scale
and VACUUM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Connection

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.store import Store
from ragreplay.store.shadow_purge import PurgeCounts, ShadowPurgeRepository

CUTOFF = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
US = timedelta(microseconds=1)
SIDE = ShadowAnswer(text="employees get 25 leave days")


def row(rid: str, request_id: str, ts: datetime, challenger: str = "b") -> ShadowRow:
    return make_shadow_row(
        id=rid,
        ts=ts,
        request_id=request_id,
        challenger=challenger,
        champion_answer=SIDE,
        challenger_answer=SIDE,
    )


def judgment(row_id: str) -> ShadowJudgmentRecord:
    return ShadowJudgmentRecord(
        row_id=row_id,
        challenger="b",
        judged_at=CUTOFF + timedelta(days=30),
        fit=Fit.FIT,
        winner="tie",
        consistent=True,
        judge="fake:default",
        judge_prompt_version="p1",
        fit_judge="fake:default",
        fit_judge_prompt_version="p1",
    )


def label(request_id: str, ts: datetime) -> ShadowFeedback:
    return ShadowFeedback(request_id=request_id, feedback=Feedback.BAD, ts=ts)


def seed(store: Store) -> None:
    """Rows just before, at and after the cutoff; a request with rows on both sides; four kinds of labels."""
    store.shadow_rows.write_shadow_rows(
        [
            row("old1", "req-old", CUTOFF - timedelta(days=10)),
            row("old2", "req-old", CUTOFF - timedelta(days=10), challenger="c"),
            row("edge", "req-edge", CUTOFF - US),  # one microsecond before: goes
            row("at", "req-at", CUTOFF),  # exactly at the cutoff: stays
            row("split-old", "req-split", CUTOFF - timedelta(seconds=1)),  # a request on both sides
            row("split-new", "req-split", CUTOFF + timedelta(seconds=1), challenger="c"),
            row("new", "req-new", CUTOFF + timedelta(days=1)),
        ]
    )
    store.shadow_judgments.save_shadow_judgments(
        [judgment(r) for r in ("old1", "old2", "edge", "at", "split-old", "new")]
    )
    store.shadow_feedback.write_shadow_feedback(
        [
            label("req-old", CUTOFF - timedelta(days=9)),  # old, its rows all go: goes
            label("req-split", CUTOFF - timedelta(days=1)),  # old, but its request keeps a row: stays
            label("req-at", CUTOFF - timedelta(days=1)),  # old, its only row is exactly at the cutoff: stays
            label("req-edge", CUTOFF + timedelta(hours=1)),  # its rows go, but the label is recent: stays
            label("req-never", CUTOFF - timedelta(days=5)),  # old, never shadowed: goes
            label("req-never-new", CUTOFF + timedelta(days=2)),  # recent, never shadowed: stays
        ]
    )


def snapshot(store: Store) -> tuple[list[str], list[str], list[str]]:
    """Every stored row id, judged row id and labelled request id, sorted."""
    rows = sorted(r.id for r in store.shadow_rows.iter_shadow_rows())
    judged = sorted(r.id for r, _ in store.shadow_judgments.load_shadow_judgments())
    requests = ["req-old", "req-split", "req-edge", "req-never", "req-never-new", "req-at", "req-new"]
    labelled = sorted(store.shadow_feedback.shadow_feedback_for(requests))
    return rows, judged, labelled


def test_purge_deletes_old_rows_their_judgments_and_unmatched_old_feedback(store: Store) -> None:
    seed(store)
    expected = PurgeCounts(rows=4, judgments=4, feedback=2)
    assert store.shadow_purge.count_shadow_purge(CUTOFF) == expected
    assert snapshot(store)[0] == ["at", "edge", "new", "old1", "old2", "split-new", "split-old"]  # dry count

    assert store.shadow_purge.purge_shadow_before(CUTOFF) == expected
    rows, judged, labelled = snapshot(store)
    assert rows == ["at", "new", "split-new"]
    assert judged == ["at", "new"]
    assert labelled == ["req-at", "req-edge", "req-never-new", "req-split"]
    assert store.shadow_feedback.count_shadow_feedback() == (
        4,
        2,
    )  # req-at's and req-split's labels match their kept rows

    assert store.shadow_purge.count_shadow_purge(CUTOFF) == PurgeCounts()
    assert store.shadow_purge.purge_shadow_before(CUTOFF) == PurgeCounts()  # a second purge finds nothing


def test_cutoff_in_another_time_zone_is_the_same_instant(store: Store) -> None:
    seed(store)
    same_instant = CUTOFF.astimezone(timezone(timedelta(hours=2)))
    assert store.shadow_purge.count_shadow_purge(same_instant) == PurgeCounts(rows=4, judgments=4, feedback=2)
    assert (
        store.shadow_purge.purge_shadow_before(same_instant + US).rows == 5
    )  # one microsecond later "at" goes too


def test_empty_store_purges_nothing(store: Store) -> None:
    assert store.shadow_purge.count_shadow_purge(CUTOFF) == PurgeCounts()
    assert store.shadow_purge.purge_shadow_before(CUTOFF) == PurgeCounts()


def test_a_failure_after_every_delete_ran_leaves_everything(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(store)
    before = snapshot(store)
    real = ShadowPurgeRepository._purge_shadow_feedback

    def fail_after_deleting(self: ShadowPurgeRepository, conn: Connection, cutoff: datetime) -> int:
        deleted = real(self, conn, cutoff)
        assert deleted == 2  # the rows, judgments and labels are deleted inside the transaction by now
        raise RuntimeError("disk full")

    monkeypatch.setattr(ShadowPurgeRepository, "_purge_shadow_feedback", fail_after_deleting)
    with pytest.raises(RuntimeError, match="disk full"):
        store.shadow_purge.purge_shadow_before(CUTOFF)
    assert snapshot(store) == before
    assert store.shadow_purge.count_shadow_purge(CUTOFF) == PurgeCounts(rows=4, judgments=4, feedback=2)


def test_a_failure_between_tables_leaves_everything(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(store)
    before = snapshot(store)

    def fail(*_: Any) -> int:
        raise RuntimeError("connection lost")

    monkeypatch.setattr(ShadowPurgeRepository, "_purge_shadow_rows", fail)  # judgments already deleted
    with pytest.raises(RuntimeError, match="connection lost"):
        store.shadow_purge.purge_shadow_before(CUTOFF)
    assert snapshot(store) == before


def test_many_rows_beyond_every_batch_and_variable_limit(store: Store) -> None:
    n = 3000
    start = CUTOFF - timedelta(days=1)
    store.shadow_rows.write_shadow_rows(
        [row(f"r{i:05d}", f"req{i}", start + timedelta(seconds=i * 60)) for i in range(n)]
    )
    old = [f"r{i:05d}" for i in range(n) if start + timedelta(seconds=i * 60) < CUTOFF]
    assert len(old) == 1440
    store.shadow_judgments.save_shadow_judgments([judgment(f"r{i:05d}") for i in range(n)])
    store.shadow_feedback.write_shadow_feedback([label(f"req{i}", start) for i in range(n)])
    expected = PurgeCounts(rows=len(old), judgments=len(old), feedback=len(old))
    assert store.shadow_purge.count_shadow_purge(CUTOFF) == expected
    assert store.shadow_purge.purge_shadow_before(CUTOFF) == expected
    assert store.shadow_rows.count_shadow_rows() == n - len(old)
    assert store.shadow_feedback.count_shadow_feedback() == (n - len(old), n - len(old))
    assert len(store.shadow_judgments.load_shadow_judgments()) == n - len(old)


def test_reclaim_space_shrinks_sqlite_and_is_left_to_autovacuum_on_postgresql(store: Store) -> None:
    big = ShadowAnswer(text="leave " * 2000)
    store.shadow_rows.write_shadow_rows(
        [
            ShadowRow(
                ts=CUTOFF - timedelta(days=1),
                request_id=f"req{i}",
                query="q",
                challenger="b",
                champion_answer=big,
                challenger_answer=big,
            )
            for i in range(300)
        ]
    )
    assert store.shadow_purge.purge_shadow_before(CUTOFF).rows == 300
    space = store.shadow_purge.reclaim_space()
    if store.url.startswith("postgresql"):
        assert space is None
        return
    assert space is not None
    assert space.before > 5_000_000  # 300 rows x 2 x 12 kB of text, freed but still in the file
    assert space.after < space.before / 10
    assert store.shadow_rows.count_shadow_rows() == 0  # the store is still usable
