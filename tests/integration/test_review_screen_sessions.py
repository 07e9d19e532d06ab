"""Review screen sessions kept in the store, on SQLite and PostgreSQL, in process: a login outlives the app that
started it (a second app on the same store takes the same cookie and form token), sessions lapse (end, idle),
logout ends one, and `ragreplay review reviewer disable` or `rotate` logs a reviewer out at once; a reviewer
disabled behind the store's back is refused at the next request too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from ragreplay.cli.app import main
from ragreplay.store import Store
from ragreplay.store.schema import review_sessions, reviewers
from ragreplay.web.review_pages import COOKIE
from review_web import app_store, client_for, csrf_of, item_of, login, make_item

__all__ = ["app_store"]  # the fixture, used by name


def _cookie_after_login(url: str, token: str) -> str:
    with client_for(url) as client:
        login(client, token)
        return str(client.cookies[COOKIE])


def _get(url: str, cookie: str, path: str = "/review") -> int:
    with client_for(url) as client:
        client.cookies.set(COOKIE, cookie)
        return int(client.get(path).status_code)


def test_a_session_outlives_the_app_that_started_it(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    queue = store.reviews.create_queue("calibration", [make_item("i1"), make_item("i2")])
    with client_for(url) as first:
        response = first.get(f"/review?token={token}")
        assert f"Max-Age={12 * 3600}" in response.headers["set-cookie"]
        cookie = first.cookies[COOKIE]
        page = first.get(f"/review/{queue.id}").text
    assert store.review_sessions.count("ann") == 1
    with client_for(url) as second:  # the web app restarted (or another replica)
        second.cookies.set(COOKIE, cookie)
        again = second.get(f"/review/{queue.id}")
        assert again.status_code == 200 and item_of(again.text) == item_of(page)
        assert csrf_of(again.text) == csrf_of(page)
        form = {"csrf": csrf_of(page), "item": item_of(page), "choice": "A"}
        assert second.post(f"/review/{queue.id}", data=form).status_code == 303
    assert [s.review.item_key for s in store.reviews.load_reviews(queue.id)] == ["i1"]


def test_sessions_lapse_at_their_end_and_when_idle(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    old = datetime.now(UTC) - timedelta(hours=3)
    for column in ("expires_at", "last_seen"):
        cookie = _cookie_after_login(url, token)
        assert _get(url, cookie) == 200
        with store._engine.begin() as conn:
            conn.execute(update(review_sessions).values({column: old}))
        assert _get(url, cookie) == 401, column
    # the idle timeout is the app's to set: none at all keeps an unused session alive until its end
    cookie = _cookie_after_login(url, token)
    with store._engine.begin() as conn:
        conn.execute(update(review_sessions).values(last_seen=old))
    with client_for(url, session_idle_s=None) as client:
        client.cookies.set(COOKIE, cookie)
        assert client.get("/review").status_code == 200
    with client_for(url, session_ttl_s=60) as client:
        assert "Max-Age=60" in client.get(f"/review?token={token}").headers["set-cookie"]


def test_logout_ends_the_session_in_the_store(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    with client_for(url) as client:
        login(client, token)
        cookie = client.cookies[COOKIE]
        page = client.get("/review").text
        assert 'action="/review/logout"' in page
        assert client.post("/review/logout", data={"csrf": "forged"}).status_code == 403
        assert store.review_sessions.count("ann") == 1
        out = client.post("/review/logout", data={"csrf": csrf_of(page)})
        assert out.status_code == 200 and "Logged out" in out.text
        assert COOKIE not in client.cookies
    assert store.review_sessions.count("ann") == 0
    assert _get(url, cookie) == 401


@pytest.mark.parametrize("how", ["cli", "flag only"])
def test_disabling_a_reviewer_logs_them_out_at_once(app_store: tuple[str, Store], how: str) -> None:
    url, store = app_store
    ann, bob = store.reviews.add_reviewer("ann"), store.reviews.add_reviewer("bob")
    queue = store.reviews.create_queue("calibration", [make_item("i1")])
    with client_for(url) as client, client_for(url) as bobs:
        login(client, ann)
        login(bobs, bob)
        page = client.get(f"/review/{queue.id}").text
        if how == "cli":
            assert main(["review", "reviewer", "disable", "ann", "--db", url]) == 0
            assert store.review_sessions.count("ann") == 0
        else:  # the flag flipped behind the repository's back: the row stays, the lookup refuses it
            with store._engine.begin() as conn:
                conn.execute(update(reviewers).where(reviewers.c.name == "ann").values(disabled=True))
            assert store.review_sessions.count("ann") == 1
        # the very next request with the old cookie, in the same running app
        assert client.get("/review").status_code == 401
        assert client.get(f"/review/{queue.id}").status_code == 401
        form = {"csrf": csrf_of(page), "item": item_of(page), "choice": "A"}
        assert client.post(f"/review/{queue.id}", data=form).status_code == 401
        assert store.reviews.load_reviews(queue.id) == []
        assert bobs.get("/review").status_code == 200  # others stay logged in
    with client_for(url, login_for_dashboard=True) as dashboard:
        dashboard.cookies.set(COOKIE, _cookie_after_login(url, bob))
        assert dashboard.get("/").status_code == 200
    if how == "cli":
        assert main(["review", "reviewer", "disable", "nobody", "--db", url]) == 2
        assert main(["review", "reviewer", "enable", "ann", "--db", url]) == 0
        with client_for(url) as client:
            login(client, ann)  # the link works again; the old session does not come back
            assert client.get("/review").status_code == 200


def test_rotating_a_reviewers_link_ends_the_old_link_and_sessions(
    app_store: tuple[str, Store], capsys: pytest.CaptureFixture[str]
) -> None:
    url, store = app_store
    old = store.reviews.add_reviewer("ann")
    cookie = _cookie_after_login(url, old)
    with client_for(url, login_for_dashboard=True) as client:
        client.cookies.set(COOKIE, cookie)
        assert client.get("/").status_code == 200
        assert main(["review", "reviewer", "rotate", "ann", "--port", "9000", "--db", url]) == 0
        link = capsys.readouterr().out.strip()
        assert link.startswith("http://127.0.0.1:9000/review?token=") and old not in link
        assert client.get("/").status_code == 401  # the dashboard off loopback checks the session too
        assert client.get("/review").status_code == 401
    with client_for(url) as client:
        assert client.get(f"/review?token={old}").status_code == 401
        login(client, link.split("token=")[1])
        assert client.get("/review").status_code == 200
    assert main(["review", "reviewer", "rotate", "nobody", "--db", url]) == 2
