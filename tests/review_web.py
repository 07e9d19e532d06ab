"""The review screen's test helpers: items that carry every name the screen must hide, an app client per
store, login by link, and reading a page's CSRF token and item handle."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from datetime import datetime

import pytest

from ragreplay.core.review import HistoryTurn, JudgeDecision, ReviewChunk, ReviewItem, ReviewSide
from ragreplay.store import Store
from ragreplay.web import create_app
from ragreplay.web.review_handles import SECRET_NAME, ItemHandles

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

SCRIPT = '<script>alert("owned")</script>'
SECRETS = (
    "cfg-zeta-challenger",
    "row-origin-4711",
    "judge-omega",
    "prompt-v-secret",
    "champion",
    "challenger",
)


def make_item(key: str, answer_x: str = "", answer_y: str = "") -> ReviewItem:
    return ReviewItem(
        key=key,
        source="calibration",
        origin="row-origin-4711",
        challenger="cfg-zeta-challenger",
        question=f"how many leave days ({key})",
        history=[HistoryTurn(role="user", content="hello, earlier message")],
        tags={"dept": "hr"},
        champion=ReviewSide(
            answer=answer_x or f"first answer {key}",
            chunks=[
                ReviewChunk(id=f"handbook#{key}", text="leave is 25 days", date=datetime(2024, 1, 5).date())
            ],
        ),
        challenger_side=ReviewSide(
            answer=answer_y or f"second answer {key}", chunks=[ReviewChunk(id=f"policy#{key}")]
        ),
        judge=JudgeDecision(judge="judge-omega", prompt_version="prompt-v-secret", winner="challenger"),
    )


@pytest.fixture
def app_store(store_url: str) -> Iterator[tuple[str, Store]]:
    store = Store.open(store_url)
    try:
        yield store_url, store
    finally:
        store.close()


def client_for(url: str, **options: object) -> TestClient:
    return TestClient(create_app(url, cache_s=0, **options), follow_redirects=False)  # type: ignore[arg-type]


def login(client: TestClient, token: str) -> None:
    response = client.get(f"/review?token={token}")
    assert response.status_code == 303 and response.headers["location"] == "/review"


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def item_of(html: str) -> str:
    """The handle naming the page's item (its key is never on the page)."""
    found = re.search(r'name="item" value="([^"]+)"', html)
    assert found
    return found.group(1)


def handle(store: Store, queue_id: str, key: str) -> str:
    secret, _ = store.secrets.get_or_create(SECRET_NAME, lambda: "unused: the app made it")
    return ItemHandles(secret, store.reviews.item_keys).of(queue_id, key)
