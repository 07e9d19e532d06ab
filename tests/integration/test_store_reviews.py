"""Review store on SQLite and PostgreSQL: reviewers and tokens, queues, atomic reservations, reviews, progress."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from ragreplay.core.review import Review, ReviewItem, ReviewSide
from ragreplay.store import Store
from ragreplay.store.connect import StoreError
from ragreplay.store.reviews import StoredReview, token_hash
from ragreplay.store.schema import reviewers


def _item(key: str) -> ReviewItem:
    return ReviewItem(
        key=key,
        source="regset-wound",
        question=f"question {key}",
        champion=ReviewSide(answer="old"),
        challenger_side=ReviewSide(answer="new"),
    )


def _review(reviewer: str, key: str, a_side: str = "champion", choice: str = "A") -> Review:
    return Review.model_validate({"reviewer": reviewer, "item_key": key, "a_side": a_side, "choice": choice})


def test_reviewer_token_is_shown_once_and_only_its_hash_is_kept(store: Store) -> None:
    token = store.reviews.add_reviewer("ann")
    assert store.reviews.reviewer_for_token(token) == "ann"
    assert store.reviews.reviewer_for_token(token + "x") is None
    assert store.reviews.reviewer_for_token("") is None
    with store._engine.connect() as conn:
        kept = conn.execute(select(reviewers.c.token_hash)).scalar_one()
    assert kept == token_hash(token) and token not in kept
    with pytest.raises(StoreError, match="already exists"):
        store.reviews.add_reviewer("ann")
    assert store.reviews.set_reviewer_disabled("ann")
    assert store.reviews.reviewer_for_token(token) is None
    assert [r.name for r in store.reviews.list_reviewers()] == ["ann"]


def test_queue_round_trip_and_lookup(store: Store) -> None:
    queue = store.reviews.create_queue("regset", [_item("b"), _item("a")], k=2, recipe={"from": "regset:v1"})
    assert [i.key for i in store.reviews.load_items(queue.id)] == ["b", "a"]  # queue order, not key order
    got = store.reviews.get_queue(queue.id[:6])
    assert got is not None and got.k == 2 and got.n_items == 2 and got.recipe == {"from": "regset:v1"}
    assert store.reviews.get_queue("latest") == got
    assert store.reviews.get_queue("rq_nope") is None
    with pytest.raises(StoreError, match="twice"):
        store.reviews.create_queue("regset", [_item("a"), _item("a")])
    with pytest.raises(StoreError, match="at least one"):
        store.reviews.create_queue("regset", [_item("a")], k=0)


def test_next_item_reserves_keeps_the_order_and_lapses(store: Store) -> None:
    queue = store.reviews.create_queue("regset", [_item("a"), _item("b")], k=1)
    t0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
    first = store.reviews.next_item_for(queue.id, "ann", draw_side=lambda _: "challenger", now=t0)
    assert first is not None and first.item.key == "a" and first.a_side == "challenger"
    # A reload gives ann the same item and side; bob gets the other one.
    again = store.reviews.next_item_for(queue.id, "ann", draw_side=lambda _: "champion", now=t0)
    assert again is not None and (again.item.key, again.a_side) == ("a", "challenger")
    bob = store.reviews.next_item_for(queue.id, "bob", now=t0)
    assert bob is not None and bob.item.key == "b"
    assert store.reviews.next_item_for(queue.id, "cy", now=t0) is None
    # Ann's reservation lapses after its hold: cy may take the item.
    later = t0 + timedelta(hours=1)
    cy = store.reviews.next_item_for(queue.id, "cy", now=later)
    assert cy is not None and cy.item.key == "a"


def test_reviews_save_replace_and_progress(store: Store) -> None:
    queue = store.reviews.create_queue("calibration", [_item("a"), _item("b")], k=2)
    got = store.reviews.next_item_for(queue.id, "ann", draw_side=lambda _: "champion")
    assert got is not None
    with pytest.raises(StoreError, match="was shown champion"):
        store.reviews.save_review(queue.id, _review("ann", "a", a_side="challenger"))
    store.reviews.save_review(queue.id, _review("ann", "a", choice="A"))
    store.reviews.save_review(queue.id, _review("ann", "a", choice="tie"))  # a later one replaces
    stored = store.reviews.load_reviews(queue.id)
    assert [(s.review.reviewer, s.review.choice) for s in stored] == [("ann", "tie")]
    with pytest.raises(StoreError, match="no item"):
        store.reviews.save_review(queue.id, _review("ann", "zzz"))
    # k=2: bob still gets item a; ann moves on to b.
    nxt = store.reviews.next_item_for(queue.id, "bob")
    assert nxt is not None and nxt.item.key == "a"
    nxt = store.reviews.next_item_for(queue.id, "ann")
    assert nxt is not None and nxt.item.key == "b"
    progress = store.reviews.progress(queue.id)
    assert (progress.items, progress.wanted, progress.reviews, progress.complete_items) == (2, 4, 1, 0)
    assert [(p.reviewer, p.done, p.held) for p in progress.reviewers] == [("ann", 1, 1), ("bob", 0, 1)]
    assert store.reviews.load_reviews(kind="regset") == []


def test_skip_is_not_handed_back_and_import_is_all_or_nothing(store: Store) -> None:
    queue = store.reviews.create_queue("triage", [_item("a"), _item("b")], k=1)
    got = store.reviews.next_item_for(queue.id, "ann")
    assert got is not None and got.item.key == "a"
    store.reviews.release(queue.id, "a", "ann", skip=True)
    nxt = store.reviews.next_item_for(queue.id, "ann")
    assert nxt is not None and nxt.item.key == "b"
    bob = store.reviews.next_item_for(queue.id, "bob")
    assert bob is not None and bob.item.key == "a"  # ann's skip freed it for others
    with pytest.raises(StoreError):
        store.reviews.save_reviews(
            [StoredReview(queue.id, _review("cy", "a")), StoredReview(queue.id, _review("cy", "nope"))]
        )
    assert store.reviews.load_reviews(queue.id) == []


@pytest.mark.parametrize("k", [1, 2])
def test_reviewers_racing_for_items_never_exceed_k(store: Store, k: int) -> None:
    n_items, n_reviewers = 6, 8
    queue = store.reviews.create_queue("regset", [_item(f"k{i}") for i in range(n_items)], k=k)
    barrier = threading.Barrier(n_reviewers)
    got: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            barrier.wait()
            mine = []
            while True:
                a = store.reviews.next_item_for(queue.id, name)
                if a is None:
                    break
                mine.append(a.item.key)
                store.reviews.save_review(queue.id, _review(name, a.item.key, a_side=a.a_side))
            got[name] = mine
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"r{i}",)) for i in range(n_reviewers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    taken = [key for keys in got.values() for key in keys]
    assert sorted(taken) == sorted(f"k{i}" for i in range(n_items) for _ in range(k))
    for keys in got.values():
        assert len(keys) == len(set(keys))  # nobody reviews one item twice
    progress = store.reviews.progress(queue.id)
    assert progress.complete_items == n_items and progress.reviews == n_items * k
