"""The review screen on SQLite and PostgreSQL, in process (Starlette's TestClient): login by token link and
sessions, 401 without one (and the dashboard off loopback), CSRF, blind item pages, escaping, save and next,
skip and back, and reservations across two reviewers on k=2 and k=1 queues."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ragreplay.core.review import taxonomy
from ragreplay.review.queues import build_calibration_queue
from ragreplay.store import Store
from ragreplay.web.app import REVIEW_CSP, SECURITY_HEADERS
from ragreplay.web.review_pages import COOKIE
from regset_data import seed_shadow
from review_web import SCRIPT, SECRETS, app_store, client_for, csrf_of, handle, login, make_item
from review_web import item_of as key_of

__all__ = ["app_store"]  # the fixture, used by name


def test_login_by_link_sets_a_strict_http_only_session_and_nothing_without_it(
    app_store: tuple[str, Store],
) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    queue = store.reviews.create_queue("calibration", [make_item("i1")])
    with client_for(url) as client:
        for path in ("/review", f"/review/{queue.id}", f"/review/{queue.id}/item/i1"):
            refused = client.get(path)
            assert refused.status_code == 401 and "review link" in refused.text
        assert client.post(f"/review/{queue.id}", data={"choice": "A"}).status_code == 401
        assert client.get("/review?token=nope").status_code == 401
        assert COOKIE not in client.cookies
        response = client.get(f"/review?token={token}")
        assert response.status_code == 303 and response.headers["location"] == "/review"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and token not in cookie
        listing = client.get("/review")
        assert listing.status_code == 200 and queue.id in listing.text and token not in listing.text
        assert listing.headers["content-security-policy"] == REVIEW_CSP
        assert (
            client.get("/").headers["content-security-policy"] == SECURITY_HEADERS["content-security-policy"]
        )
        assert client.get("/").status_code == 200  # on loopback the dashboard needs no login, as before
    store.reviews.set_reviewer_disabled("ann")
    with client_for(url) as client:
        assert client.get(f"/review?token={token}").status_code == 401


def test_off_loopback_the_dashboard_needs_a_session_too(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    with client_for(url, login_for_dashboard=True) as client:
        for path in ("/", "/rows", "/index.json", "/rows/x"):
            assert client.get(path).status_code == 401
        assert client.get("/healthz").text == "ok"
        login(client, token)
        assert client.get("/").status_code == 200
        assert client.get("/rows.json").status_code == 200


def test_every_post_needs_the_sessions_csrf_token(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    queue = store.reviews.create_queue("calibration", [make_item("i1")])
    with client_for(url) as client:
        login(client, token)
        page = client.get(f"/review/{queue.id}").text
        for csrf in (None, "", "wrong", csrf_of(page) + "x"):
            data = {"item": key_of(page), "choice": "A"} | ({} if csrf is None else {"csrf": csrf})
            assert client.post(f"/review/{queue.id}", data=data).status_code == 403
        assert store.reviews.load_reviews(queue.id) == []
        other = store.reviews.add_reviewer("bob")
        with client_for(url) as bobs:
            login(bobs, other)
            bobs.get(f"/review/{queue.id}")
            # ann's token does not work in bob's session
            data = {"item": key_of(page), "choice": "A", "csrf": csrf_of(page)}
            assert bobs.post(f"/review/{queue.id}", data=data).status_code == 403


def test_the_item_page_is_blind_ordered_as_stored_and_escaped(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    item = make_item("i1", answer_x=f"x says {SCRIPT}", answer_y="y says 25")
    queue = store.reviews.create_queue("calibration", [item])
    with client_for(url) as client:
        login(client, token)
        html = client.get(f"/review/{queue.id}").text
        held = store.reviews.next_item_for(queue.id, "ann")
        assert held is not None
        for secret in SECRETS:
            assert secret.lower() not in html.lower(), secret
        a, b = item.sides(held.a_side)
        side_a = html.split('id="side-A"')[1].split('id="side-B"')[0]
        assert (
            re.sub("<[^>]+>", "", side_a).count(a.answer.replace("<", "&lt;").replace(">", "&gt;")[:8]) >= 1
        )
        assert (a.answer[:6] in side_a) and (b.answer[:6] not in side_a)
        assert SCRIPT not in html and "&lt;script&gt;" in html
        assert "hello, earlier message" in html and "leave is 25 days" in html and "2024-01-05" in html
        assert re.findall(r"<script[^>]*>", html) == ['<script src="/review/static/keys.js">']
        assert html.count("<!--") == 0
        for _ in range(3):  # a reload shows the same item and the same sides
            assert (
                client.get(f"/review/{queue.id}").text.split('id="side-A"')[1][:200]
                == html.split('id="side-A"')[1][:200]
            )
        js = client.get("/review/static/keys.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert "keydown" in js.text


def test_a_real_calibration_queue_names_no_configuration_or_judge(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    now = datetime.now(UTC).replace(microsecond=0)
    seed_shadow(store, now)
    queue = build_calibration_queue(store, now - timedelta(days=7), taxonomy(), n=5, seed=1)
    token = store.reviews.add_reviewer("ann")
    with client_for(url) as client:
        login(client, token)
        html = client.get(f"/review/{queue.id}").text
        held = store.reviews.next_item_for(queue.id, "ann")
        assert held is not None and held.item.judge is not None
        # the seeded answers themselves say "champion answer N": only the tool's own names are checked here
        for secret in ("fake:default", held.item.origin, 'data-side="', "judge"):
            assert secret not in html.lower(), secret
        assert held.item.sides(held.a_side)[0].answer in html


def test_submit_saves_the_review_and_goes_to_the_next_item_then_back_edits(
    app_store: tuple[str, Store],
) -> None:
    url, store = app_store
    token = store.reviews.add_reviewer("ann")
    queue = store.reviews.create_queue("calibration", [make_item("i1"), make_item("i2")])
    with client_for(url, failure_tags=["stale-table"]) as client:
        login(client, token)
        page = client.get(f"/review/{queue.id}").text
        assert "stale-table" in page and "wrong-version" in page
        held = store.reviews.next_item_for(queue.id, "ann")
        assert held is not None and key_of(page) == handle(store, queue.id, "i1")
        missing = client.post(f"/review/{queue.id}", data={"csrf": csrf_of(page), "item": key_of(page)})
        assert missing.status_code == 400 and "Pick A, B or tie" in missing.text
        form = {
            "csrf": csrf_of(page),
            "item": key_of(page),
            "choice": "B",
            "a.groundedness": "2",
            "b.groundedness": "5",
            "tag": ["wrong-version", "stale-table"],
            "correct_answer": f"25 days {SCRIPT}",
            "action": "submit",
            "shown_at": re.findall(r'name="shown_at" value="([^"]+)"', page)[0],
        }
        saved = client.post(f"/review/{queue.id}", data=form)
        assert saved.status_code == 303 and saved.headers["location"] == f"/review/{queue.id}"
        [stored] = store.reviews.load_reviews(queue.id)
        review = stored.review
        assert review.reviewer == "ann" and review.item_key == "i1" and review.a_side == held.a_side
        assert review.choice == "B" and review.winner != held.a_side
        assert review.scores_a == {"groundedness": 2} and review.scores_b == {"groundedness": 5}
        assert review.failure_tags == ["wrong-version", "stale-table"]
        assert review.correct_answer == f"25 days {SCRIPT}"
        assert review.taxonomy_version == taxonomy(["stale-table"]).version and review.shown_at is not None
        nxt = client.get(f"/review/{queue.id}").text
        i1 = handle(store, queue.id, "i1")
        assert key_of(nxt) == handle(store, queue.id, "i2")
        assert f'id="back" href="/review/{queue.id}/item/{i1}"' in nxt
        edit = client.get(f"/review/{queue.id}/item/{i1}").text
        assert SCRIPT not in edit and "25 days &lt;script&gt;" in edit  # the comment, escaped
        assert 'value="B" data-key="b" checked' in edit and 'id="skip"' not in edit
        again = client.post(f"/review/{queue.id}/item/{i1}", data={"csrf": csrf_of(edit), "choice": "tie"})
        assert again.status_code == 303
        [replaced] = store.reviews.load_reviews(queue.id)
        assert replaced.review.choice == "tie" and replaced.review.a_side == held.a_side
        skip = client.post(
            f"/review/{queue.id}", data={"csrf": csrf_of(nxt), "item": key_of(nxt), "action": "skip"}
        )
        assert skip.status_code == 303
        done = client.get(f"/review/{queue.id}").text
        assert 'id="done"' in done
        listing = client.get("/review").text
        assert 'data-done="1"' in listing


def test_two_reviewers_share_items_on_k2_and_never_on_k1(app_store: tuple[str, Store]) -> None:
    url, store = app_store
    tokens = {name: store.reviews.add_reviewer(name) for name in ("ann", "bob")}
    both = store.reviews.create_queue("calibration", [make_item("i1"), make_item("i2")], k=2)
    once = store.reviews.create_queue("calibration", [make_item("j1"), make_item("j2")], k=1)
    with client_for(url) as ann, client_for(url) as bob:
        login(ann, tokens["ann"])
        login(bob, tokens["bob"])
        pa, pb = ann.get(f"/review/{both.id}").text, bob.get(f"/review/{both.id}").text
        assert key_of(pa) == key_of(pb) == handle(store, both.id, "i1")
        for client, page in ((ann, pa), (bob, pb)):
            data = {"csrf": csrf_of(page), "item": key_of(page), "choice": "A"}
            assert client.post(f"/review/{both.id}", data=data).status_code == 303
        assert sorted(s.review.reviewer for s in store.reviews.load_reviews(both.id)) == ["ann", "bob"]
        assert store.reviews.progress(both.id).complete_items == 1
        qa, qb = ann.get(f"/review/{once.id}").text, bob.get(f"/review/{once.id}").text
        assert {key_of(qa), key_of(qb)} == {handle(store, once.id, k) for k in ("j1", "j2")}
        data = {"csrf": csrf_of(qa), "item": key_of(qa), "choice": "A"}
        assert ann.post(f"/review/{once.id}", data=data).status_code == 303
        assert 'id="done"' in ann.get(f"/review/{once.id}").text  # bob holds the other one
        stolen = {"csrf": csrf_of(qa), "item": key_of(qb), "choice": "A"}
        assert ann.post(f"/review/{once.id}", data=stolen).status_code in (403, 409)
