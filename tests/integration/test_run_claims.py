"""The store's side of `run --workers`, on SQLite and PostgreSQL: claims over a run's results (disjoint, done
and parked cases never claimed again, parked ones not waited for), a run found or created under a lock by
starters at once, a finished result never overwritten by a later write (first wins), and a run marked done
or interrupted once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from builders import make_run
from ragreplay.core.runs import ResultRecord, ResultStatus, RunStatus, SourceRecord
from ragreplay.core.types import Answer, Case, Conversation, Feedback, Message, Role
from ragreplay.core.verdicts import Verdict
from ragreplay.store import Store
from ragreplay.store.batch import WriteBatch
from ragreplay.store.claim_queues import PARKED_WORKER, run_queue

RUN = "run_1"
Q = run_queue(RUN)


def _ingest(store: Store, n: int) -> list[str]:
    items = []
    for i in range(n):
        msgs = (Message(role=Role.HUMAN, content=f"q{i}"), Message(role=Role.AI, content=f"a{i}"))
        case = Case(
            id=f"case{i:03d}",
            conversation_id=f"c{i:03d}",
            turn_index=1,
            query=f"q{i}",
            history=(),
            old_answer=f"a{i}",
            feedback=Feedback.GOOD,
        )
        items.append((Conversation(id=f"c{i:03d}", messages=msgs), [case], []))
    store.cases.write_source(
        SourceRecord(id="src", path="x", format="canonical", ingested_at=datetime.now(UTC)), items
    )
    return [f"case{i:03d}" for i in range(n)]


def _done(case_id: str, text: str = "new") -> ResultRecord:
    return ResultRecord(
        run_id=RUN,
        case_id=case_id,
        status=ResultStatus.DONE,
        answer=Answer(text=text),
        verdict=Verdict.GOOD_FIT,
    )


def _ids(batch: list[ResultRecord]) -> list[str]:
    return [r.case_id for r in batch]


def test_workers_claim_disjoint_cases_not_done_and_parked_ones_are_skipped(store: Store) -> None:
    ids = _ingest(store, 12)
    store.runs.create_run(make_run(RUN, n_cases=12), ids)
    store.write_batch(WriteBatch(results=[_done("case000"), _done("case001")]))
    claims = store.work_claims
    a = claims.claim_run_results("A", RUN, 4, 60)
    b = claims.claim_run_results("B", RUN, 4, 60)
    assert _ids(a.items) == ids[2:6]  # the done cases are never claimed
    assert _ids(b.items) == ids[6:10]  # A's are held
    assert b.others_live == 4
    assert claims.park(Q, "A", ["case002", "case003"]) == 2  # A tried them and they failed
    assert claims.release(Q, "A", ["case004", "case005"]) == 2  # A finished them
    store.write_batch(WriteBatch(results=[_done("case004"), _done("case005")]))
    c = claims.claim_run_results("C", RUN, 10, 60)
    assert _ids(c.items) == ids[10:12]  # parked and done cases are not claimed again
    assert c.others_live == 4  # B's live claims; parked ones are nobody's, not waited for
    assert claims.live_claims(Q) == 6 and claims.parked(Q) == 2
    assert {w for w, _ in claims.claims(Q).values()} == {"B", "C", PARKED_WORKER}
    assert claims.renew(Q, "A", 60) == 0  # parked claims are no longer A's


def test_starters_at_once_find_or_create_one_run(store: Store, store_url: str) -> None:
    ids = _ingest(store, 5)
    found: list[tuple[str, bool]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def starter(i: int) -> None:
        own = Store.open(store_url)
        try:
            start.wait()
            run, existed = own.runs.join_run(make_run(f"run_{i}", n_cases=5), ids)
            found.append((run.id, existed))
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=starter, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert len({run_id for run_id, _ in found}) == 1  # one run, found by the three others
    assert sorted(existed for _, existed in found) == [False, True, True, True]
    assert len(store.runs.list_runs()) == 1
    (run,) = store.runs.list_runs()
    assert store.runs.result_counts(run.id) == {ResultStatus.PENDING: 5}


def test_joining_an_ended_run_sets_it_running_and_frees_its_parked_cases(store: Store) -> None:
    ids = _ingest(store, 4)
    store.runs.create_run(make_run(RUN, n_cases=4), ids)
    store.work_claims.claim_run_results("A", RUN, 2, 60)
    store.work_claims.park(Q, "A", ["case000"])
    store.work_claims.release(Q, "A")
    assert store.runs.end_shared_run(RUN, RunStatus.INTERRUPTED)
    assert not store.runs.end_shared_run(RUN, RunStatus.INTERRUPTED)  # only while running
    run, existed = store.runs.join_run(make_run("other"), ids)
    assert existed and run.id == RUN and run.status == RunStatus.RUNNING
    assert store.work_claims.claims(Q) == {}  # the failed case is tried again in this attempt
    again, _ = store.runs.join_run(make_run("other"), ids, run_id=RUN)
    assert again.id == RUN
    assert store.runs.end_shared_run(RUN, RunStatus.DONE)
    assert not store.runs.end_shared_run(RUN, RunStatus.DONE)  # of workers ending at once, one marks it
    assert store.runs.get_run(RUN).status == RunStatus.DONE  # type: ignore[union-attr]


def test_a_finished_result_is_never_overwritten_by_a_later_write(store: Store) -> None:
    ids = _ingest(store, 2)
    store.runs.create_run(make_run(RUN, n_cases=2), ids)
    store.write_batch(WriteBatch(results=[_done("case000", "first")]))
    late = [
        _done("case000", "second"),  # a second worker's replay of the same case
        ResultRecord(run_id=RUN, case_id="case000", status=ResultStatus.ERROR, error="target: timeout"),
        ResultRecord(run_id=RUN, case_id="case001", status=ResultStatus.ERROR, error="target: timeout"),
    ]
    for result in late:
        store.write_batch(WriteBatch(results=[result]))
    store.write_batch(WriteBatch(results=[_done("case001", "retried")]))  # not done yet: replaced
    results = {r.case_id: r for r in store.runs.load_results(RUN)}
    assert results["case000"].status == ResultStatus.DONE and results["case000"].answer.text == "first"  # type: ignore[union-attr]
    assert results["case001"].status == ResultStatus.DONE and results["case001"].answer.text == "retried"  # type: ignore[union-attr]
