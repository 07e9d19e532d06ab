"""Judgments of review items by judge version, and the calibration history, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragreplay.core.judge_version import judge_version
from ragreplay.core.review import JudgeDecision, ReviewItem, ReviewSide
from ragreplay.store import Store
from ragreplay.store.batch import WriteBatch
from ragreplay.store.calibration_history import CalibrationSnapshot
from ragreplay.store.review_judgments import ReviewJudgmentRecord

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
OLD = judge_version("fake:a", "fake:a", "prompt one", ["groundedness"], "p1")
NEW = judge_version("fake:a", "fake:a", "prompt two", ["groundedness"], "p2")


def _queue(store: Store, keys: list[str]) -> str:
    items = [
        ReviewItem(
            key=k,
            source="calibration",
            question=f"q {k}",
            champion=ReviewSide(answer="a"),
            challenger_side=ReviewSide(answer="b"),
        )
        for k in keys
    ]
    return str(store.reviews.create_queue("calibration", items, recipe={}).id)


def _record(queue_id: str, key: str, version: str, winner: str = "champion") -> ReviewJudgmentRecord:
    decision = JudgeDecision(
        judge="fake:a",
        prompt_version=version,
        winner=winner,
        scores_champion={"groundedness": 4},
        scores_challenger={"groundedness": 2},
        judge_version=(OLD if version == "p1" else NEW).id,
    )
    return ReviewJudgmentRecord(
        queue_id=queue_id, key=key, decision=decision, judged_at=NOW, details={"calls": 2}
    )


def test_judgments_are_keyed_by_queue_item_and_version(store: Store) -> None:
    q1, q2 = _queue(store, ["k1", "k2"]), _queue(store, ["k3"])
    store.review_judgments.save_review_judgments(
        [_record(q1, "k1", "p1"), _record(q1, "k2", "p1"), _record(q1, "k1", "p2")]
    )
    # Through the writer's batch too, in the same transaction as the rest of a tick.
    store.write_batch(WriteBatch(review_judgments=[_record(q2, "k3", "p2", "tie")]))
    assert store.review_judgments.judged_keys(OLD.id) == {(q1, "k1"), (q1, "k2")}
    assert store.review_judgments.judged_keys(NEW.id) == {(q1, "k1"), (q2, "k3")}
    assert store.review_judgments.judged_keys("jv_none") == set()
    # A second judgment of the same item by the same version replaces the first.
    store.review_judgments.save_review_judgments([_record(q1, "k1", "p2", "challenger")])
    new = store.review_judgments.load_review_judgments(judge_version=NEW.id)
    assert [(r.queue_id, r.key, r.decision.winner) for r in new] == sorted(
        [(q1, "k1", "challenger"), (q2, "k3", "tie")]
    )
    assert new[0].decision.scores_champion == {"groundedness": 4} and new[0].details == {"calls": 2}
    assert new[0].judged_at == NOW and new[0].judge_version == NEW.id
    only_q2 = store.review_judgments.load_review_judgments(queue_ids=[q2])
    assert [(r.key, r.judge_version) for r in only_q2] == [("k3", NEW.id)]
    assert len(store.review_judgments.load_review_judgments()) == 4


def _snap(version: str, at: datetime, n: int, agree: int, source: str = "calibration") -> CalibrationSnapshot:
    return CalibrationSnapshot(
        judge_version=version,
        judge="fake:a@p1",
        computed_at=at,
        source=source,
        n=n,
        agree=agree,
        agreement=agree / n,
        low=0.5,
        high=0.9,
        kappa=0.4,
        status="ok",
        per_tag=[{"label": "dept=hr", "n": n, "agree": agree}],
    )


def test_history_appends_changed_figures_newest_first(store: Store) -> None:
    first = _snap(OLD.id, NOW, 10, 8)
    assert store.calibration_history.record([first]) == [first]
    # The same figures again (a later time, another source, another window) add nothing.
    again = first.model_copy(
        update={"computed_at": NOW + timedelta(hours=1), "source": "rejudge", "since": NOW}
    )
    assert store.calibration_history.record([again]) == []
    later = _snap(OLD.id, NOW + timedelta(days=1), 12, 10)
    other = _snap(NEW.id, NOW + timedelta(days=1), 12, 11, "rejudge")
    assert store.calibration_history.record([later, other]) == [later, other]
    history = store.calibration_history.list_history()
    assert [(s.judge_version, s.n) for s in history][:1] in ([(OLD.id, 12)], [(NEW.id, 12)])
    assert sorted((s.judge_version, s.n, s.agree) for s in history) == sorted(
        [(OLD.id, 10, 8), (OLD.id, 12, 10), (NEW.id, 12, 11)]
    )
    assert [s.n for s in store.calibration_history.list_history(OLD.id)] == [12, 10]
    assert store.calibration_history.list_history(limit=1)[0].computed_at == NOW + timedelta(days=1)
    latest = store.calibration_history.latest(OLD.id)
    assert latest is not None and latest.per_tag == [{"label": "dept=hr", "n": 12, "agree": 10}]
    assert latest.kappa == pytest.approx(0.4) and latest.computed_at == NOW + timedelta(days=1)
    assert store.calibration_history.latest("jv_none") is None
