"""The review screen in a real headless chromium against a real server: a reviewer logs in with their link and
reviews an item by keyboard only (choice, an axis, a tag, the correct answer, submit-and-next, help, back and
skip); the stored review is what they keyed, and the page ran no script but its own and logged no error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragreplay.asgi.serving import serve_in_thread
from ragreplay.core.review import ReviewChunk, ReviewItem, ReviewSide, taxonomy
from ragreplay.store import Store
from ragreplay.web import create_app

pytestmark = pytest.mark.browser

XSS = '<img src=x onerror="alert(1)">'


def _item(key: str) -> ReviewItem:
    return ReviewItem(
        key=key,
        source="regset-wound",
        challenger="cfg-secret",
        question=f"how many leave days? ({key})",
        champion=ReviewSide(answer=f"25 days {XSS}", chunks=[ReviewChunk(id="handbook#1", text="25 days")]),
        challenger_side=ReviewSide(answer="30 days", chunks=[ReviewChunk(id="handbook#2", text="30 days")]),
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store, str, str]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('review') / 'review.db'}"
    store = Store.open(url)
    token = store.reviews.add_reviewer("ann")
    queue = store.reviews.create_queue("regset", [_item("i1"), _item("i2")])
    with serve_in_thread(create_app(url, cache_s=0)) as base:
        yield base, store, token, queue.id
    store.close()


def _focus_first_axis(page: Any) -> None:
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("!!(document.activeElement && document.activeElement.closest('fieldset.axis'))"):
            return
    raise AssertionError("Tab never reached an axis")


def test_an_item_reviewed_by_keyboard_only(served: tuple[str, Store, str, str], page: Any) -> None:
    base, store, token, queue_id = served
    page.goto(f"{base}/review?token={token}")
    page.wait_for_selector("#queues")
    assert token not in page.url
    page.goto(f"{base}/review/{queue_id}")
    page.wait_for_selector("#item")
    first = page.locator("#item").get_attribute("data-item")
    assert first and first != "i1" and 'data-key="i1"' not in page.content()  # an opaque handle, not the key
    assert page.evaluate("document.querySelectorAll('img').length") == 0  # the answer's tag is text
    held = store.reviews.next_item_for(queue_id, "ann")
    assert held is not None

    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#help").is_visible()

    page.keyboard.press("b")
    _focus_first_axis(page)  # A's first axis
    page.keyboard.press("4")
    page.keyboard.press("Tab")  # A's second axis
    page.keyboard.press("2")
    key = page.locator('input[name="tag"][value="wrong-version"]').get_attribute("data-key")
    page.keyboard.press(key)
    page.keyboard.press("c")
    page.keyboard.type("25 days, as the 2024 handbook says")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#item:not([data-item="{first}"])')
    second = page.locator("#item").get_attribute("data-item")

    [stored] = store.reviews.load_reviews(queue_id)
    review = stored.review
    assert review.reviewer == "ann" and review.item_key == "i1" and review.a_side == held.a_side
    assert review.choice == "B" and review.scores_a == {"groundedness": 4, "completeness": 2}
    assert review.scores_b == {} and review.failure_tags == ["wrong-version"]
    assert review.correct_answer == "25 days, as the 2024 handbook says"
    assert review.taxonomy_version == taxonomy().version

    page.keyboard.press("Backspace")  # back to the review just made
    page.wait_for_url(f"**/review/{queue_id}/item/{first}")
    assert page.locator('input[name="choice"][value="B"]').is_checked()
    page.keyboard.press("t")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#item[data-item="{second}"]')
    assert [s.review.choice for s in store.reviews.load_reviews(queue_id)] == ["tie"]

    page.keyboard.press("s")
    page.wait_for_selector("#done")
    assert store.reviews.progress(queue_id).reviewers[0].skipped == 1
    assert "cfg-secret" not in page.content()
    assert page.problems == []
