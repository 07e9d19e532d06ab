"""Review screen sessions in the store, on SQLite and PostgreSQL: only the hash of a session id is kept, sessions
outlive the store object that started them, lapse (end and idle timeout), end on logout, and end at once when
their reviewer is disabled or their token rotated, both by deleting the rows and by the check at each lookup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from ragreplay.store import Store
from ragreplay.store.review_sessions import TOUCH_EVERY, session_hash
from ragreplay.store.schema import review_sessions, reviewers

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
TTL = timedelta(hours=12)
IDLE = timedelta(hours=2)


def _start(store: Store, token: str, now: datetime = T0) -> str:
    started = store.review_sessions.start(token, TTL, IDLE, now=now)
    assert started is not None
    return started[0]


def test_a_session_keeps_only_the_hash_of_its_id_and_outlives_its_store_object(store_url: str) -> None:
    with Store.open(store_url) as first:
        token = first.reviews.add_reviewer("ann")
        started = first.review_sessions.start(token, TTL, IDLE, now=T0)
        assert started is not None
        sid, reviewer = started
        assert reviewer == "ann"
        assert first.review_sessions.start("not-a-token", TTL, now=T0) is None
        assert first.review_sessions.start("", TTL, now=T0) is None
        with first._engine.connect() as conn:
            [row] = conn.execute(select(review_sessions)).all()
        assert row.id_hash == session_hash(sid) and sid not in " ".join(str(v) for v in row)
        assert token not in " ".join(str(v) for v in row)
    with Store.open(store_url) as second:  # another process on the same store
        found = second.review_sessions.find(sid, IDLE, now=T0 + timedelta(minutes=5))
        assert found is not None and found.reviewer == "ann" and found.expires_at == T0 + TTL
        assert second.review_sessions.find(sid + "x", IDLE, now=T0) is None
        assert second.review_sessions.find("", IDLE, now=T0) is None


def test_sessions_lapse_at_their_end_and_when_idle_and_end_on_logout(store: Store) -> None:
    token = store.reviews.add_reviewer("ann")
    sid = _start(store, token)
    # used every 90 minutes, it stays alive past the idle timeout until its end
    for minutes in range(90, 12 * 60, 90):
        assert store.review_sessions.find(sid, IDLE, now=T0 + timedelta(minutes=minutes)) is not None
    assert store.review_sessions.find(sid, IDLE, now=T0 + TTL) is None
    idle = _start(store, token)
    assert store.review_sessions.find(idle, IDLE, now=T0 + IDLE - timedelta(seconds=1)) is not None
    assert store.review_sessions.find(idle, IDLE, now=T0 + 2 * IDLE) is None
    assert store.review_sessions.find(idle, None, now=T0 + 2 * IDLE) is not None  # no idle timeout
    # a lookup within TOUCH_EVERY of the last one writes nothing
    quiet = _start(store, token)
    store.review_sessions.find(quiet, IDLE, now=T0 + TOUCH_EVERY / 2)
    with store._engine.connect() as conn:
        seen = conn.execute(
            select(review_sessions.c.last_seen).where(review_sessions.c.id_hash == session_hash(quiet))
        ).scalar_one()
    assert seen == T0
    out = _start(store, token)
    assert store.review_sessions.end(out) and not store.review_sessions.end(out)
    assert store.review_sessions.find(out, IDLE, now=T0) is None
    # starting a session clears the lapsed ones
    _start(store, token, now=T0 + 2 * TTL)
    assert store.review_sessions.count("ann") == 1


def test_disabling_a_reviewer_deletes_their_sessions_and_the_lookup_checks_it_too(store: Store) -> None:
    ann, bob = store.reviews.add_reviewer("ann"), store.reviews.add_reviewer("bob")
    sids = [_start(store, ann), _start(store, ann)]
    bobs = _start(store, bob)
    assert store.reviews.set_reviewer_disabled("ann")
    assert store.review_sessions.count("ann") == 0 and store.review_sessions.count("bob") == 1
    assert all(store.review_sessions.find(s, IDLE, now=T0) is None for s in sids)
    assert store.review_sessions.start(ann, TTL, now=T0) is None
    store.reviews.set_reviewer_disabled("ann", disabled=False)
    assert all(store.review_sessions.find(s, IDLE, now=T0) is None for s in sids)  # gone for good
    # the flag set behind the repository's back (another tool, a replica's SQL): the lookup still refuses
    with store._engine.begin() as conn:
        conn.execute(update(reviewers).where(reviewers.c.name == "bob").values(disabled=True))
    assert store.review_sessions.count("bob") == 1
    assert store.review_sessions.find(bobs, IDLE, now=T0) is None


def test_rotating_a_token_ends_the_old_link_and_its_sessions(store: Store) -> None:
    old = store.reviews.add_reviewer("ann")
    sid = _start(store, old)
    new = store.reviews.rotate_token("ann")
    assert new is not None and new != old
    assert store.reviews.reviewer_for_token(old) is None and store.reviews.reviewer_for_token(new) == "ann"
    assert store.review_sessions.count("ann") == 0 and store.review_sessions.find(sid, IDLE, now=T0) is None
    assert store.reviews.rotate_token("nobody") is None
    # a session row kept for a token that is no longer the reviewer's is refused at lookup
    kept = _start(store, new)
    with store._engine.begin() as conn:
        conn.execute(update(reviewers).where(reviewers.c.name == "ann").values(token_hash="0" * 64))
    assert store.review_sessions.count("ann") == 1
    assert store.review_sessions.find(kept, IDLE, now=T0) is None
