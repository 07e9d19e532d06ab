"""Work claims on SQLite and PostgreSQL: batches claimed by one worker only, expired leases taken over, done
items never claimed again, renewals, the shared token bucket, and judgments saved first-wins."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Fit
from ragreplay.store import Store
from ragreplay.store.batch import WriteBatch
from ragreplay.store.work_claims import SHADOW_JUDGE_QUEUE

NOW = datetime.now(UTC)
Q = SHADOW_JUDGE_QUEUE


def rows(n: int, start: int = 0, hours: float = 1.0) -> list[ShadowRow]:
    return [
        make_shadow_row(id=f"r{i:04d}", ts=NOW - timedelta(hours=hours, seconds=-i), request_id=f"q{i}")
        for i in range(start, start + n)
    ]


def judgment(row_id: str, fit: Fit = Fit.FIT, judge: str = "j") -> ShadowJudgmentRecord:
    return ShadowJudgmentRecord(
        row_id=row_id,
        challenger="b",
        judged_at=datetime.now(UTC),
        fit=fit,
        judge=judge,
        judge_prompt_version="1",
        fit_judge="f",
        fit_judge_prompt_version="1",
        payload={},
    )


def ids(batch: list[ShadowRow]) -> list[str]:
    return [r.id for r in batch]


def test_two_workers_claim_disjoint_batches_in_order_until_none_is_left(store: Store) -> None:
    store.shadow_rows.write_shadow_rows(rows(25))
    claims = store.work_claims
    a = claims.claim_shadow_rows("A", 10, 60)
    b = claims.claim_shadow_rows("B", 10, 60)
    assert ids(a.items) == [f"r{i:04d}" for i in range(10)]  # oldest first
    assert ids(b.items) == [f"r{i:04d}" for i in range(10, 20)]  # A's rows are held: B gets the next ones
    assert (a.others_live, b.others_live) == (0, 10)
    a2 = claims.claim_shadow_rows("A", 10, 60, after=a.after)
    assert ids(a2.items) == [f"r{i:04d}" for i in range(20, 25)]
    assert claims.claim_shadow_rows("A", 10, 60, after=a2.after).items == []
    assert claims.claim_shadow_rows("C", 10, 60).items == []  # from the start: every row is held
    held = claims.claims(Q)
    assert len(held) == 25 and {w for w, _ in held.values()} == {"A", "B"}


def test_since_and_judged_rows_are_left_out_and_released_claims_free_their_items(store: Store) -> None:
    store.shadow_rows.write_shadow_rows([*rows(4), *rows(2, start=100, hours=24 * 10)])
    store.shadow_judgments.save_shadow_judgments([judgment("r0000")])
    claims = store.work_claims
    got = claims.claim_shadow_rows("A", 50, 60, since=NOW - timedelta(days=7))
    assert ids(got.items) == ["r0001", "r0002", "r0003"]
    assert claims.release(Q, "B", ["r0001"]) == 0  # not B's to release
    assert claims.release(Q, "A", ["r0001"]) == 1
    assert ids(claims.claim_shadow_rows("B", 50, 60, since=NOW - timedelta(days=7)).items) == ["r0001"]
    assert claims.release(Q, "A") == 2


def test_an_expired_claim_is_taken_over_and_one_whose_row_was_judged_is_dropped(store: Store) -> None:
    store.shadow_rows.write_shadow_rows(rows(6))
    claims = store.work_claims
    dead = claims.claim_shadow_rows("dead", 4, 0.3)
    alive = claims.claim_shadow_rows("alive", 1, 60, after=None)
    assert ids(dead.items) == ["r0000", "r0001", "r0002", "r0003"] and ids(alive.items) == ["r0004"]
    # the dead worker saved one row's judgment before it died, but never released its claim
    store.shadow_judgments.save_shadow_judgments([judgment("r0001")])
    assert claims.claim_shadow_rows("other", 10, 60, after=None).items == [rows(6)[5]]
    time.sleep(0.5)  # the dead worker's leases end
    taken = claims.claim_shadow_rows("other", 10, 60, after=None)
    assert ids(taken.items) == ["r0000", "r0002", "r0003"]  # taken over first; r0001 is judged
    held = claims.claims(Q)
    assert "r0001" not in held
    assert {i for i, (w, _) in held.items() if w == "other"} == {"r0000", "r0002", "r0003", "r0005"}
    assert claims.renew(Q, "dead", 60) == 0  # nothing left to renew: it lost its claims


def test_a_renewed_lease_is_not_taken_over(store: Store) -> None:
    store.shadow_rows.write_shadow_rows(rows(2))
    claims = store.work_claims
    assert len(claims.claim_shadow_rows("A", 2, 0.6).items) == 2
    for _ in range(3):
        time.sleep(0.3)
        assert claims.renew(Q, "A", 0.6) == 2
    got = claims.claim_shadow_rows("B", 2, 60)
    assert got.items == [] and got.others_live == 2


def test_claims_racing_from_threads_never_hand_a_row_to_two_workers(store: Store) -> None:
    store.shadow_rows.write_shadow_rows(rows(200))
    got: dict[str, list[str]] = {}

    def work(name: str) -> None:
        after = None
        mine: list[str] = []
        while True:
            batch = store.work_claims.claim_shadow_rows(name, 7, 60, after=after)
            if not batch.items:
                break
            after = batch.after
            mine += ids(batch.items)
        got[name] = mine

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [i for mine in got.values() for i in mine]
    assert sorted(every) == sorted(ids(rows(200)))  # each row once, none missed


def test_a_second_judgment_from_the_writer_never_overwrites_the_first(store: Store) -> None:
    store.shadow_rows.write_shadow_rows(rows(2))
    first = [judgment("r0000", Fit.FIT, judge="first"), judgment("r0001", Fit.FIT, judge="first")]
    store.write_batch(WriteBatch(shadow_judgments=first))
    store.write_batch(WriteBatch(shadow_judgments=[judgment("r0000", Fit.NO_FIT, judge="second")]))
    stored = {rec.row_id: (rec.fit, rec.judge) for _, rec in store.shadow_judgments.load_shadow_judgments()}
    assert stored == {"r0000": (Fit.FIT, "first"), "r0001": (Fit.FIT, "first")}
    # re-judging on purpose (the repository's own save) still replaces
    store.shadow_judgments.save_shadow_judgments([judgment("r0001", Fit.NO_FIT, judge="again")])
    stored = {rec.row_id: (rec.fit, rec.judge) for _, rec in store.shadow_judgments.load_shadow_judgments()}
    assert stored == {"r0000": (Fit.FIT, "first"), "r0001": (Fit.NO_FIT, "again")}


def test_the_shared_bucket_grants_its_capacity_then_its_rate(store: Store) -> None:
    claims = store.work_claims
    taken, wait = claims.take_tokens("p", want=8, rate=10.0, capacity=5)
    assert (taken, wait) == (5, 0.0)  # full on first use, never more than it holds
    taken, wait = claims.take_tokens("p", want=8, rate=10.0, capacity=5)
    assert taken == 0 and 0.45 < wait <= 0.5  # until the bucket is full again (8 wanted, 5 at most)
    time.sleep(0.35)
    taken, _ = claims.take_tokens("p", want=8, rate=10.0, capacity=5)
    assert taken in (3, 4)  # 0.35 s at 10/s (and the time the calls took)
