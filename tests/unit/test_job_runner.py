"""The one job runner: bounded concurrency over a lazily read input, counts, progress, and stopping."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from ragreplay.jobs.runner import JobPlan, Progress, run_job


@dataclass
class SleepyJob:
    """Each item sleeps a little; records how many items were in flight at once."""

    fail_on: int | None = None
    in_flight: int = 0
    peak: int = 0
    seen: list[int] = field(default_factory=list)

    async def run_one(self, item: int) -> int:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.001 * (item % 3))
            if item == self.fail_on:
                raise RuntimeError(f"item {item} failed")
            self.seen.append(item)
            return item
        finally:
            self.in_flight -= 1

    def count(self, progress: Progress, result: int) -> None:
        progress.errors += result % 2  # odd items count as errors, to check the job's own counting
        progress.cost_usd += 0.5


async def test_every_item_runs_once_with_at_most_n_in_flight() -> None:
    job = SleepyJob()
    final = await run_job(job, JobPlan(todo=range(50), progress=Progress(total=50)), concurrency=4)
    assert sorted(job.seen) == list(range(50))
    assert job.peak == 4
    assert (final.done, final.errors, final.cost_usd) == (50, 25, 25.0)


async def test_counts_of_earlier_attempts_are_carried_and_progress_reported() -> None:
    seen: list[tuple[int, int]] = []
    plan = JobPlan(todo=[1, 2, 3], progress=Progress(total=10, done=7, errors=1))
    final = await run_job(SleepyJob(), plan, 2, progress=lambda p: seen.append((p.done, p.total)))
    assert final.done == 10 and final.errors == 1 + 2
    assert seen[0] == (7, 10) and seen[-1] == (10, 10) and len(seen) == 4


async def test_the_input_is_read_lazily() -> None:
    taken: list[int] = []

    def items() -> Iterator[int]:
        for i in range(1000):
            taken.append(i)
            yield i

    job = SleepyJob(fail_on=5)
    with pytest.raises(RuntimeError, match="item 5 failed"):
        await run_job(job, JobPlan(todo=items(), progress=Progress(total=1000)), concurrency=3)
    # a failure stops the workers: far fewer items were read than the input holds
    assert len(taken) < 20


async def test_the_first_failure_cancels_the_other_workers() -> None:
    cancelled: list[int] = []

    @dataclass
    class HangingJob:
        async def run_one(self, item: int) -> int:
            if item == 0:
                await asyncio.sleep(0.01)
                raise ValueError("boom")
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(item)
                raise
            return item

        def count(self, progress: Progress, result: int) -> None:
            pass

    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(
            run_job(HangingJob(), JobPlan(todo=range(4), progress=Progress(total=4)), 4), timeout=5
        )
    assert sorted(cancelled) == [1, 2, 3]


async def test_an_empty_plan_finishes_at_once() -> None:
    final = await run_job(SleepyJob(), JobPlan(todo=[], progress=Progress(total=0)), 8)
    assert final.done == 0
