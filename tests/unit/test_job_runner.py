"""The one job runner: bounded concurrency over a lazily read input, counts, progress, and stopping."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from ragreplay.jobs.read_ahead import FIRST_CHUNK, ReadAhead
from ragreplay.jobs.runner import YOUNG_OBJECTS, JobPlan, Progress, run_job


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


async def test_read_ahead_runs_every_item_once_reading_in_its_own_thread() -> None:
    readers: set[str] = set()

    def items() -> Iterator[int]:
        for i in range(300):
            readers.add(threading.current_thread().name)
            yield i

    job = SleepyJob()
    plan = JobPlan(todo=items(), progress=Progress(total=300), read_ahead=True)
    final = await run_job(job, plan, concurrency=16)
    assert sorted(job.seen) == list(range(300)) and final.done == 300
    assert job.peak == 16
    assert {name.split("_")[0] for name in readers} == {"ragreplay-reader"}  # never the event loop's thread
    assert not [t for t in threading.enumerate() if t.name.startswith("ragreplay-reader")]  # the thread ended


async def test_read_ahead_reads_a_few_chunks_ahead_not_the_whole_input() -> None:
    taken: list[int] = []

    def items() -> Iterator[int]:
        for i in range(10_000):
            taken.append(i)
            yield i

    job = SleepyJob(fail_on=5)
    with pytest.raises(RuntimeError, match="item 5 failed"):
        await run_job(job, JobPlan(todo=items(), progress=Progress(total=10_000), read_ahead=True), 3)
    assert len(taken) <= FIRST_CHUNK * (1 + 2 + 4)  # the first chunk and the two after it, at most


async def test_an_error_reading_ahead_stops_the_job_with_that_error() -> None:
    def items() -> Iterator[int]:
        yield from range(40)
        raise OSError("the store went away")

    job = SleepyJob()
    with pytest.raises(OSError, match="the store went away"):
        await run_job(job, JobPlan(todo=items(), progress=Progress(total=100), read_ahead=True), 4)
    assert len(job.seen) <= 40


async def test_read_ahead_hands_out_chunks_that_double() -> None:
    sizes: list[int] = []
    ahead = ReadAhead(range(100), chunk=32)
    original = ahead._read

    def read(size: int) -> list[int]:
        sizes.append(size)
        return original(size)

    ahead._read = read  # type: ignore[method-assign]
    got = []
    while (taken := await ahead.take())[0]:
        got.append(taken[1])
    await ahead.close()
    assert got == list(range(100))
    assert sizes[:4] == [FIRST_CHUNK, 2 * FIRST_CHUNK, 32, 32]


async def test_while_jobs_run_the_collector_is_paced_and_restored_after_the_last() -> None:
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    seen: dict[str, tuple[tuple[int, ...], int]] = {}

    @dataclass
    class Watching:
        name: str
        wait_s: float

        async def run_one(self, item: int) -> int:
            await asyncio.sleep(self.wait_s)
            seen[self.name] = (gc.get_threshold(), gc.get_freeze_count())
            return item

        def count(self, progress: Progress, result: int) -> None:
            pass

    def plan() -> JobPlan[int]:
        return JobPlan(todo=[1], progress=Progress(total=1))

    # the short job ends first: the long one still runs paced, and the end of the long one restores
    await asyncio.gather(
        run_job(Watching("short", 0.0), plan(), 1), run_job(Watching("long", 0.05), plan(), 1)
    )
    for thresholds, frozen in seen.values():
        assert thresholds[0] >= YOUNG_OBJECTS and thresholds[1:] == before[1:]
        assert frozen > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_objects_the_process_froze_itself_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        await run_job(SleepyJob(), JobPlan(todo=range(3), progress=Progress(total=3)), 2)
        assert frozen > 0 and gc.get_freeze_count() > 0  # not unfrozen by the job
    finally:
        gc.unfreeze()


def test_jobs_on_several_threads_restore_the_collector_once_all_end() -> None:
    before = gc.get_threshold()
    started = threading.Barrier(4)

    @dataclass
    class Meeting:
        async def run_one(self, item: int) -> int:
            await asyncio.to_thread(started.wait, 10)  # every thread's job is running at once
            assert gc.get_threshold()[0] >= YOUNG_OBJECTS
            return item

        def count(self, progress: Progress, result: int) -> None:
            pass

    failures: list[BaseException] = []

    def one_job() -> None:
        try:
            asyncio.run(run_job(Meeting(), JobPlan(todo=[1], progress=Progress(total=1)), 1))
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=one_job) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert failures == []
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
