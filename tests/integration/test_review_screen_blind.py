"""Item keys never reach the review screen, on SQLite and PostgreSQL: every page (queues, item, edit, done, an
error) names items by an opaque handle, the store's keys (shadow row ids, case ids), configuration names, the
judge and its verdict appear nowhere in the HTML, and handles map back only within their queue."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ragreplay.core.review import JudgeDecision, ReviewChunk, ReviewItem, ReviewSide, taxonomy
from ragreplay.review.queues import build_calibration_queue
from ragreplay.store import Store
from regset_data import seed_shadow
from review_web import app_store, client_for, csrf_of, handle, item_of, login

__all__ = ["app_store"]  # the fixture, used by name

HIDDEN = (
    "shadow-row-5e1f07aa",  # a key derived from the row id
    "case-c0ffee42",
    "cfg-zeta-challenger",
    "judge-omega",
    "BAD_NO_FIT",
    "GOOD_FIT",
    "champion",
    "challenger",
)


def _item(key: str, n: int) -> ReviewItem:
    return ReviewItem(
        key=key,
        source="triage",
        origin=f"case:{key}",
        challenger="cfg-zeta-challenger",
        question=f"question number {n} about leave",
        champion=ReviewSide(
            answer=f"old answer {n}", chunks=[ReviewChunk(id=f"handbook#{n}", text="25 days")]
        ),
        challenger_side=ReviewSide(answer=f"new answer {n}"),
        judge=JudgeDecision(judge="judge-omega", prompt_version="BAD_NO_FIT", winner="challenger"),
    )


def _assert_hidden(html: str, *more: str) -> None:
    for secret in (*HIDDEN, *more):
        assert secret.lower() not in html.lower(), secret


def test_no_page_carries_a_stored_key_a_configuration_or_a_verdict(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    keys = ["shadow-row-5e1f07aa", "case-c0ffee42"]
    queue = store.reviews.create_queue("triage", [_item(k, n) for n, k in enumerate(keys)], k=2)
    with client_for(url) as client:
        login(client, token)
        seen = [client.get("/review").text]
        first = client.get(f"/review/{queue.id}").text
        seen.append(first)
        assert re.search(r'data-item="[A-Za-z0-9_-]{22}"', first)
        assert item_of(first) == handle(store, queue.id, keys[0])
        saved = client.post(
            f"/review/{queue.id}", data={"csrf": csrf_of(first), "item": item_of(first), "choice": "A"}
        )
        assert saved.status_code == 303
        second = client.get(f"/review/{queue.id}").text
        seen.append(second)
        back = re.findall(r'id="back" href="([^"]+)"', second)
        assert back == [f"/review/{queue.id}/item/{item_of(first)}"]
        seen.append(client.get(back[0]).text)
        bad = client.post(f"/review/{queue.id}", data={"csrf": csrf_of(second), "item": "x", "choice": "A"})
        assert bad.status_code == 409
        seen.append(bad.text)
        client.post(
            f"/review/{queue.id}", data={"csrf": csrf_of(second), "item": item_of(second), "choice": "B"}
        )
        seen.append(client.get(f"/review/{queue.id}").text)
        seen.append(client.get("/review").text)
        assert 'id="done"' in seen[-2]
    for html in seen:
        _assert_hidden(html)
    assert [s.review.item_key for s in store.reviews.load_reviews(queue.id)] == keys  # mapped back


def test_handles_belong_to_their_queue_and_to_the_store(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    one = store.reviews.create_queue("triage", [_item("same-key", 1)])
    two = store.reviews.create_queue("triage", [_item("same-key", 1)])
    with client_for(url) as client:
        login(client, token)
        page = client.get(f"/review/{one.id}").text
        client.post(f"/review/{one.id}", data={"csrf": csrf_of(page), "item": item_of(page), "choice": "A"})
        mine = item_of(page)
        assert client.get(f"/review/{one.id}/item/{mine}").status_code == 200
        assert client.get(f"/review/{two.id}/item/{mine}").status_code == 404  # same key, other queue
        assert client.get(f"/review/{one.id}/item/same-key").status_code == 404  # the key is no handle
        assert handle(store, two.id, "same-key") != mine
    with client_for(url) as restarted:  # the secret is the store's: handles survive a restart
        login(restarted, token)
        assert restarted.get(f"/review/{one.id}/item/{mine}").status_code == 200


def test_a_real_calibration_queue_keeps_its_row_ids_off_the_page(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    now = datetime.now(UTC).replace(microsecond=0)
    seed_shadow(store, now)
    queue = build_calibration_queue(store, now - timedelta(days=7), taxonomy(), n=5, seed=1)
    items = store.reviews.load_items(queue.id)
    token = store.reviews.add_reviewer("ann")
    with client_for(url) as client:
        login(client, token)
        html = client.get(f"/review/{queue.id}").text
    for item in items:
        assert item.key not in html and item.origin not in html  # the seed names its challengers "a", "b"
