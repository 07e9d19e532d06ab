"""Failure tags matched to what a report covers, on SQLite and PostgreSQL: a run's cases in queues built from
that run, a shadow report's rows per challenger (rows outside the window left out), a gate's questions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from builders import make_case
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.regset import question_key
from ragreplay.core.review import Review, ReviewItem
from ragreplay.review.failure_tags import (
    question_failure_tags,
    run_failure_tags,
    shadow_failure_tags,
    with_shadow_failure_tags,
)
from ragreplay.review.queues import case_item, shadow_item
from ragreplay.shadow.judging import stored_shadow_summary
from ragreplay.store import Store
from ragreplay.store.reviews import StoredReview
from regset_data import seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)


def _review(queue: str, reviewer: str, key: str, *tags: str) -> StoredReview:
    review = Review(reviewer=reviewer, item_key=key, a_side="champion", choice="B", failure_tags=list(tags))
    return StoredReview(queue, review)


def _tags(ft: FailureTags) -> list[tuple[str, int, int]]:
    return [(c.tag, c.items, c.reviews) for c in ft.tags]


def _case_items(*ids: str) -> list[ReviewItem]:
    return [case_item(make_case(id=i, query=f"question {i}?"), f"new answer {i}", []) for i in ids]


def test_a_runs_failure_tags_come_from_queues_built_from_that_run(store: Store) -> None:
    a = store.reviews.create_queue("triage", _case_items("c1", "c2"), recipe={"source": "triage:run_a"})
    b = store.reviews.create_queue("triage", _case_items("c1"), recipe={"source": "triage:run_b"})
    sample = store.reviews.create_queue(
        "calibration", _case_items("c3", "c9"), recipe={"source": "calibration", "run": "run_a"}
    )
    store.reviews.save_reviews(
        [
            _review(a.id, "ann", "c1", "wrong-version"),
            _review(a.id, "bob", "c1", "wrong-version", "missing-document"),
            _review(a.id, "ann", "c2"),
            _review(b.id, "ann", "c1", "hallucinated-clause"),
            _review(sample.id, "simulated-1", "c3", "wrong-language"),
            _review(sample.id, "simulated-1", "c9", "wrong-language"),  # c9 is not a case of the run
        ]
    )
    ft = run_failure_tags(store, "run_a", ["c1", "c2", "c3"])
    assert (ft.reviews, ft.items, ft.simulated_reviews) == (4, 3, 1)
    assert _tags(ft) == [("wrong-version", 1, 2), ("missing-document", 1, 1), ("wrong-language", 1, 1)]
    assert _tags(run_failure_tags(store, "run_b", ["c1"])) == [("hallucinated-clause", 1, 1)]
    assert run_failure_tags(store, "run_c", ["c1", "c2"]) == FailureTags()


def test_shadow_failure_tags_per_challenger_for_the_rows_in_the_report(store: Store) -> None:
    seed_shadow(store, NOW)
    rows = {}
    for row_id in ("row-001", "row-002", "row-001c", "row-old"):
        found = store.shadow_browse.shadow_row_with_judgment(row_id)
        assert found is not None
        rows[row_id] = found[0]
    items = [shadow_item(rows[i], None, "calibration") for i in rows]
    queue = store.reviews.create_queue("calibration", items, recipe={"source": "calibration"})
    store.reviews.save_reviews(
        [
            _review(queue.id, "ann", "row-001", "wrong-version", "team-tag"),
            _review(queue.id, "bob", "row-001", "wrong-version"),
            _review(queue.id, "ann", "row-002"),
            _review(queue.id, "ann", "row-001c", "wrong-language"),
            _review(queue.id, "ann", "row-old", "missing-document"),  # older than the window
        ]
    )
    summary = stored_shadow_summary(store, NOW - timedelta(days=7))
    by_challenger = shadow_failure_tags(store, summary)
    assert set(by_challenger) == {"b", "c"}
    b, c = by_challenger["b"], by_challenger["c"]
    assert (b.reviews, b.items) == (3, 2) and _tags(b) == [("wrong-version", 1, 2), ("team-tag", 1, 1)]
    assert (c.reviews, c.items) == (1, 1) and _tags(c) == [("wrong-language", 1, 1)]
    assert with_shadow_failure_tags(store, summary).failure_tags == by_challenger

    asked = question_failure_tags(store, [question_key(rows["row-001"].query)])
    # row-001 and row-001c are one request, so one question: both rows' reviews count for it
    assert asked.reviews == 3 and ("wrong-version", 1, 2) in _tags(asked)
    assert question_failure_tags(store, ["q_nothing"]) == FailureTags()


def test_no_reviews_gives_empty_figures_for_every_challenger(store: Store) -> None:
    seed_shadow(store, NOW)
    summary = stored_shadow_summary(store, NOW - timedelta(days=7))
    assert shadow_failure_tags(store, summary) == {"b": FailureTags(), "c": FailureTags()}


def test_the_dashboard_says_when_reviewers_are_simulated(store: Store, store_url: str) -> None:
    from starlette.testclient import TestClient

    from ragreplay.web.app import create_app

    seed_shadow(store, NOW)
    found = store.shadow_browse.shadow_row_with_judgment("row-001")
    assert found is not None
    queue = store.reviews.create_queue("calibration", [shadow_item(found[0], found[1], "calibration")])
    with TestClient(create_app(store_url, cache_s=0)) as client:
        store.reviews.save_reviews([_review(queue.id, "ann", "row-001", "wrong-version")])
        assert "simulated" not in client.get("/").text
        store.reviews.save_reviews([_review(queue.id, "simulated-1", "row-001", "wrong-version")])
        page = client.get("/").text
        assert 'id="calibration-simulated"' in page and 'id="failure-tags-simulated"' in page
        assert "simulated ones (simulated-1): the demo's ground truth, not people" in page
        assert client.get("/index.json").json()["simulated_reviewers"] == ["simulated-1"]
