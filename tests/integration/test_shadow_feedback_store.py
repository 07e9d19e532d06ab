"""Live feedback in the store, on SQLite and PostgreSQL: the latest label per request wins, replays change
nothing, lookups by request id, and counts of labels with and without a shadow row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback
from ragreplay.store import Store

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def fb(request_id: str, label: Feedback, minutes: int = 0, comment: str | None = None) -> ShadowFeedback:
    return ShadowFeedback(
        request_id=request_id, feedback=label, ts=T0 + timedelta(minutes=minutes), comment=comment
    )


def test_latest_label_per_request_wins_whatever_the_write_order(store: Store) -> None:
    store.shadow_feedback.write_shadow_feedback([fb("r1", Feedback.GOOD, 0), fb("r2", Feedback.BAD, 0)])
    store.shadow_feedback.write_shadow_feedback(
        [fb("r1", Feedback.BAD, 5, comment="wrong year")]
    )  # the user changed it
    store.shadow_feedback.write_shadow_feedback(
        [fb("r1", Feedback.GOOD, 1)]
    )  # late delivery of an older label: ignored
    store.shadow_feedback.write_shadow_feedback(
        [fb("r3", Feedback.GOOD, 2), fb("r3", Feedback.BAD, 3)]
    )  # same batch
    store.shadow_feedback.write_shadow_feedback([])
    got = store.shadow_feedback.shadow_feedback_for(["r1", "r2", "r3", "missing", "r1"])
    assert {k: v.feedback for k, v in got.items()} == {
        "r1": Feedback.BAD,
        "r2": Feedback.BAD,
        "r3": Feedback.BAD,
    }
    assert got["r1"].comment == "wrong year"
    assert got["r1"].ts == T0 + timedelta(minutes=5)
    assert got["r1"].ts.tzinfo is not None


def test_replaying_a_batch_changes_nothing(store: Store) -> None:
    batch = [fb(f"r{i}", Feedback.GOOD if i % 3 else Feedback.BAD, i) for i in range(1200)]
    store.shadow_feedback.write_shadow_feedback(batch)
    store.shadow_feedback.write_shadow_feedback(batch)
    got = store.shadow_feedback.shadow_feedback_for(f"r{i}" for i in range(1200))
    assert len(got) == 1200
    assert sum(v.feedback == Feedback.BAD for v in got.values()) == 400
    assert store.shadow_feedback.count_shadow_feedback() == (1200, 0)


def test_counts_tell_labels_on_shadowed_requests_apart(store: Store) -> None:
    side = ShadowAnswer(text="x")
    rows = [
        ShadowRow(request_id=rid, query="q", challenger=c, champion_answer=side, challenger_answer=side)
        for rid in ("r1", "r2")
        for c in ("a", "b")
    ]
    store.shadow_rows.write_shadow_rows(rows)
    store.shadow_feedback.write_shadow_feedback([fb("r1", Feedback.GOOD), fb("r9", Feedback.BAD, 10)])
    assert store.shadow_feedback.count_shadow_feedback() == (2, 1)
    assert store.shadow_rows.shadowed_request_ids(["r1", "r9", "r2", "r1"]) == {"r1", "r2"}
    assert store.shadow_feedback.count_shadow_feedback(since=T0 + timedelta(minutes=5)) == (1, 0)
