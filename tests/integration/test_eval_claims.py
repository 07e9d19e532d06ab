"""The store's side of `eval --workers`, on SQLite and PostgreSQL: a shared eval run found or created under a
lock by starters at once (one run, a placeholder for every row), claims over its rows not scored (disjoint,
scored and parked rows never claimed), a scored row never replaced by a later write (first wins), and the run
marked done once; a row the target answered before a kill handed to the job with its saved answer."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import cast

from ragreplay.core.eval import EvalRow, RowScores
from ragreplay.core.runs import RunStatus
from ragreplay.core.types import Answer
from ragreplay.evaluation.job import EvalJob
from ragreplay.evaluation.shared import EvalOptions, SharedEval, eval_feed, join_shared_eval
from ragreplay.evaluation.target_rows import UNSCORED
from ragreplay.jobs.writer import StoreWriter
from ragreplay.store import Store
from ragreplay.store.claim_queues import PARKED_WORKER, eval_queue
from ragreplay.store.evals import EvalRowRecord, EvalRunRecord

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
IDS = [f"r{i:02d}" for i in range(10)]


def _candidate(eval_id: str) -> EvalRunRecord:
    return EvalRunRecord(
        id=eval_id,
        created_at=T0,
        status=RunStatus.RUNNING,
        dataset="rows.jsonl",
        judge="fake:default",
        prompt_version="p",
        config_hash="h1",
        n_rows=len(IDS),
    )


def _row(eval_id: str, row_id: str, error: bool, value: str) -> EvalRowRecord:
    return EvalRowRecord(
        eval_id=eval_id, row_id=row_id, position=IDS.index(row_id), error=error, payload={"v": value}
    )


def _pending(eval_id: str) -> list[EvalRowRecord]:
    return [_row(eval_id, i, True, "pending") for i in IDS]


def test_starters_at_once_share_one_run_with_a_placeholder_for_every_row(store_url: str) -> None:
    stores = [Store.open(store_url) for _ in range(4)]
    found: list[tuple[str, bool]] = []
    barrier = threading.Barrier(4)

    def start(i: int) -> None:
        barrier.wait()
        record, existed = stores[i].evals.join_eval(_candidate(f"eval_{i}"), _pending(f"eval_{i}"))
        found.append((record.id, existed))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert len({eval_id for eval_id, _ in found}) == 1 and sorted(e for _, e in found) == [
            False,
            True,
            True,
            True,
        ]
        (record,) = stores[0].evals.list_evals()
        rows = stores[0].evals.load_eval_rows(record.id)
        assert [r.row_id for r in rows] == IDS and all(r.error for r in rows)
        assert stores[0].evals.unscored(record.id) == len(IDS)
    finally:
        for s in stores:
            s.close()


def test_claims_are_disjoint_scored_rows_stay_first_and_the_run_is_marked_done_once(store: Store) -> None:
    _, existed = store.evals.join_eval(_candidate("eval_a"), _pending("eval_a"))
    assert not existed
    claims = store.work_claims
    a = claims.claim_eval_rows("a", "eval_a", 4, 60)
    b = claims.claim_eval_rows("b", "eval_a", 4, 60)
    got_a, got_b = [r.row_id for r in a.items], [r.row_id for r in b.items]
    assert got_a == IDS[:4] and got_b == IDS[4:8] and b.others_live == 4
    # a scored row is kept against a later write (another worker's, after its lease ran out), errored or not
    store.evals.save_eval_rows([_row("eval_a", "r00", False, "first")])
    store.evals.save_eval_rows([_row("eval_a", "r00", False, "second"), _row("eval_a", "r01", True, "err")])
    store.evals.save_eval_rows([_row("eval_a", "r00", True, "late error")])
    stored = {r.row_id: r for r in store.evals.load_eval_rows("eval_a")}
    assert stored["r00"].payload == {"v": "first"} and not stored["r00"].error
    assert stored["r01"].payload == {"v": "err"}  # an error replaces a placeholder, and may be replaced
    claims.park(eval_queue("eval_a"), "a", ["r01"])
    claims.release(eval_queue("eval_a"), "a")
    claims.release(eval_queue("eval_a"), "b")
    # next claim: neither the scored row nor the parked one
    c = claims.claim_eval_rows("c", "eval_a", 20, 60)
    assert [r.row_id for r in c.items] == IDS[2:]
    assert store.work_claims.claims(eval_queue("eval_a"))["r01"][0] == PARKED_WORKER
    assert store.evals.end_shared_eval("eval_a", RunStatus.DONE, {"n": 1}) is True
    assert store.evals.end_shared_eval("eval_a", RunStatus.DONE, {"n": 2}) is False
    done = store.evals.get_eval("eval_a")
    assert done is not None and done.status == RunStatus.DONE and done.summary == {"n": 1}
    assert "r01" not in store.work_claims.claims(eval_queue("eval_a"))  # parked rows freed with the attempt
    # joined again: done with errored rows, so running again
    again, existed = store.evals.join_eval(_candidate("eval_b"), _pending("eval_b"))
    assert existed and again.id == "eval_a" and again.status == RunStatus.RUNNING
    assert store.evals.end_shared_eval("eval_a", RunStatus.INTERRUPTED) is True


def test_a_claimed_row_the_target_answered_before_is_not_asked_again(store: Store) -> None:
    rows = [EvalRow(id=i, question=f"q {i}", answer="") for i in IDS[:3]]
    options = EvalOptions(judge_spec="fake:default")
    record, _ = join_shared_eval(store, rows, "rows.jsonl", options)
    answer = Answer(text="saved answer")
    saved = RowScores(row_id="r01", question="q r01", target_answer=answer, error=UNSCORED)
    store.evals.save_eval_rows(
        [
            EvalRowRecord(
                eval_id=record.id, row_id="r01", position=1, error=True, payload=saved.model_dump(mode="json")
            )
        ]
    )

    async def claim() -> tuple[list[str], dict[str, Answer]]:
        job = EvalJob(record.id, None, cast(StoreWriter, None), {r.id: i for i, r in enumerate(rows)})
        feed = eval_feed(job, {r.id: r for r in rows}, SharedEval(store.work_claims, "w", 30))
        try:
            got, _ = feed.queue.claim(10)
        finally:
            await feed.close()
        return [r.id for r in got], job.answers

    claimed, answers = asyncio.run(claim())
    assert claimed == IDS[:3]
    assert answers == {"r01": answer}  # handed to the job: the target is not asked again for it
    assert store.work_claims.claims(eval_queue(record.id)) == {}  # released on close
