"""The claim feed over a scripted queue: batches handed out once each, waiting while other workers hold live
claims, finished items released, everything released at close, ``--limit`` kept, a failed claim raised, and the
runner reporting each item finished only once it is saved."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

import pytest

from ragreplay.jobs.claims import ClaimFeed, StoreQueue
from ragreplay.jobs.runner import JobPlan, Progress, run_job
from ragreplay.store.work_claims import ClaimBatch, WorkClaimsRepository


class FakeRepo:
    def __init__(self) -> None:
        self.released: list[str] = []
        self.released_all = 0
        self.renewed = 0
        self.lock = threading.Lock()

    def renew(self, queue: str, worker: str, lease_s: float) -> int:
        self.renewed += 1
        return 0

    def release(self, queue: str, worker: str, item_ids: list[str] | None = None) -> int:
        with self.lock:
            if item_ids is None:
                self.released_all += 1
            else:
                self.released += item_ids
        return 0


def scripted(batches: list[tuple[list[str], int]], repo: FakeRepo) -> tuple[StoreQueue[str], list[Any]]:
    """A queue whose claims return ``batches`` in turn (items, others' live claims), then nothing."""
    script = list(batches)
    afters: list[Any] = []

    def claim(n: int, after: Any) -> ClaimBatch[str]:
        afters.append(after)
        items, others = script.pop(0) if script else ([], 0)
        assert len(items) <= n
        return ClaimBatch(items, items[-1] if items else after, others)

    queue = StoreQueue(cast(WorkClaimsRepository, repo), "q", "me", claim, key=lambda item: item)
    return queue, afters


async def drain(feed: ClaimFeed[str]) -> list[str]:
    got = []
    while True:
        found, item = await feed.take()
        if not found:
            break
        got.append(cast(str, item))
        feed.finished(item)
    await feed.close()
    return got


def test_batches_are_handed_out_once_and_the_feed_waits_while_others_hold_claims() -> None:
    repo = FakeRepo()
    queue, afters = scripted(
        [(["a", "b"], 1), (["c"], 1), ([], 1), ([], 1), (["d"], 0), ([], 0), ([], 0)], repo
    )
    feed = ClaimFeed(queue, batch=2, lease_s=1.0, poll_s=0.01)
    assert asyncio.run(drain(feed)) == ["a", "b", "c", "d"]
    assert sorted(repo.released) == ["a", "b", "c", "d"] and repo.released_all == 1
    # each claim goes on from the last item claimed; the first time it finds nothing there it scans once from
    # the start, then goes on from where it was
    assert afters[:5] == [None, "b", "c", None, "c"] and None not in afters[5:]


def test_the_limit_stops_claiming() -> None:
    repo = FakeRepo()
    queue, _ = scripted([(["a", "b"], 0), (["c"], 0), (["d", "e"], 0)], repo)
    feed = ClaimFeed(queue, batch=2, lease_s=1.0, limit=3)
    assert asyncio.run(drain(feed)) == ["a", "b", "c"]


def test_a_failed_claim_is_raised_and_claims_are_released() -> None:
    repo = FakeRepo()

    def claim(n: int, after: Any) -> ClaimBatch[str]:
        raise RuntimeError("store gone")

    queue = StoreQueue(cast(WorkClaimsRepository, repo), "q", "me", claim, key=lambda item: item)
    feed = ClaimFeed(queue, batch=2, lease_s=1.0)
    with pytest.raises(RuntimeError, match="store gone"):
        asyncio.run(drain(feed))


class Job:
    def __init__(self, fail_on: str | None = None) -> None:
        self.saved: list[str] = []
        self.fail_on = fail_on

    async def run_one(self, item: str) -> str:
        await asyncio.sleep(0.001)
        if item == self.fail_on:
            raise ValueError(item)
        self.saved.append(item)
        return item

    def count(self, progress: Progress, result: str) -> None:
        pass


def test_the_runner_reports_items_finished_once_saved_and_closes_the_feed_on_failure() -> None:
    repo = FakeRepo()
    queue, _ = scripted([(["a", "b", "c"], 0), (["d", "e"], 0)], repo)
    job = Job()
    feed = ClaimFeed(queue, batch=3, lease_s=1.0)
    state = asyncio.run(run_job(job, JobPlan(todo=(), progress=Progress(total=5), feed=feed), 2))
    assert state.done == 5 and sorted(job.saved) == ["a", "b", "c", "d", "e"]
    assert sorted(repo.released) == sorted(job.saved) and repo.released_all == 1

    repo = FakeRepo()
    queue, _ = scripted([(["a", "b", "c"], 0)], repo)
    job = Job(fail_on="b")
    feed = ClaimFeed(queue, batch=3, lease_s=1.0)
    with pytest.raises(ValueError):
        asyncio.run(run_job(job, JobPlan(todo=(), progress=Progress(total=3), feed=feed), 1))
    assert "b" not in repo.released and repo.released_all == 1  # b is let go with the rest, unjudged
