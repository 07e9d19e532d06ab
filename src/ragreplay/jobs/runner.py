"""The one job runner: every long job (replay, compare, triage, shadow judging, and the gate) runs through it.

A job is planned from the store (what is left, what earlier attempts already did), then its items run with
bounded concurrency: a fixed pool of workers pulls items lazily, so a million-row input never becomes a million
tasks. Each item is done and saved by the job itself (through the one :class:`~ragreplay.jobs.writer.StoreWriter`,
off the event loop), counted, and reported to a progress callback. The first exception, Ctrl-C or cancellation
stops every worker; the job is then told it was interrupted, so a later run of the same command resumes it.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, cast

from ragreplay.jobs.claims import ItemFeed
from ragreplay.jobs.read_ahead import ReadAhead

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
R = TypeVar("R")


@dataclass
class Progress:
    """The counts a progress display shows while a job goes on; items done earlier count as done."""

    total: int
    done: int = 0
    errors: int = 0
    unscorable: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls whose price is unknown, not in ``cost_usd`` (see ``core/costs``)."""


ProgressCallback = Callable[[Progress], None]


@dataclass
class JobPlan(Generic[T]):
    """What a job still has to do (``todo``, any iterable, read lazily) and the counts of what it did before.

    ``progress.total`` counts every item of the job, done or not.
    """

    todo: Iterable[T]
    progress: Progress
    read_ahead: bool = False
    """True when ``todo`` reads the store as it goes: it is then read in a thread, a chunk ahead of the workers
    (:mod:`ragreplay.jobs.read_ahead`), so its page reads do not hold up the event loop."""
    feed: ItemFeed[T] | None = None
    """When several workers share the job: the items come from this feed (claimed from the store,
    :class:`~ragreplay.jobs.claims.ClaimFeed`) instead of ``todo``, each item reported finished once saved."""


class Job(Protocol[T_contra, R]):
    """One long job, as the runner sees it."""

    async def run_one(self, item: T_contra) -> R:
        """Do one item and save its outcome (returns once it is saved); failures worth recording are
        recorded and returned, never raised. What it raises stops the job."""
        ...

    def count(self, progress: Progress, result: R) -> None:
        """Add one finished item's outcome to ``progress`` (``done`` is counted by the runner)."""
        ...


async def run_job(
    job: Job[T, R],
    plan: JobPlan[T],
    concurrency: int,
    progress: ProgressCallback | None = None,
) -> Progress:
    """Run every item of ``plan.todo`` through ``job`` with at most ``concurrency`` in flight.

    Returns the final counts. The first exception (or cancellation) cancels the other workers, waits for
    them, and propagates; what was saved before stays saved.
    """
    with paced_collector():
        return await _run_job(job, plan, concurrency, progress)


async def _run_job(
    job: Job[T, R], plan: JobPlan[T], concurrency: int, progress: ProgressCallback | None
) -> Progress:
    state = plan.progress
    if progress is not None:
        progress(state)

    async def finish(item: T) -> R:
        result = await job.run_one(item)
        state.done += 1
        job.count(state, result)
        if progress is not None:
            progress(state)
        return result

    if plan.feed is not None:
        return await _run_feed(finish, plan.feed, concurrency, state)

    if not plan.read_ahead:
        items = iter(plan.todo)

        async def worker() -> None:
            for item in items:  # one shared iterator: each item is taken by exactly one worker
                await finish(item)

        await run_workers(worker, max(1, concurrency))
        return state

    ahead = ReadAhead(plan.todo)

    async def reading_worker() -> None:
        while True:
            found, item = await ahead.take()
            if not found:
                return
            await finish(cast(T, item))

    try:
        await run_workers(reading_worker, max(1, concurrency))
    finally:
        await ahead.close()
    return state


async def _run_feed(
    finish: Callable[[T], Awaitable[R]], feed: ItemFeed[T], concurrency: int, state: Progress
) -> Progress:
    """The workers of a job shared with other processes: items from ``feed``, each reported finished (with its
    result) once saved; the feed is closed (this worker's claims released) however the job ends."""

    async def claiming_worker() -> None:
        while True:
            found, item = await feed.take()
            if not found:
                return
            result = await finish(cast(T, item))
            feed.finished(item, result)

    try:
        await run_workers(claiming_worker, max(1, concurrency))
    finally:
        await feed.close()
    return state


YOUNG_OBJECTS = 10_000
"""The cyclic collector's first threshold while a job runs (Python's default is 700)."""
_paced_jobs = 0
_saved_thresholds: tuple[int, ...] = ()
_froze = False
_pacing = threading.Lock()


@contextmanager
def paced_collector() -> Iterator[None]:
    """While jobs run, the cyclic garbage collector skips what existed before the first one started and runs
    less often; both are restored when the last one ends.

    A full collection scans every object the process holds: with the modules, schemas and plan a job starts
    with, that is a pause of 70-90 ms (2-core machine) in which no reply is read and no request sent, while
    every call in flight waits. Frozen (:func:`gc.freeze`), those objects are not scanned again; the garbage a
    job makes is still collected, in fewer, larger passes."""
    global _paced_jobs, _saved_thresholds, _froze
    with _pacing:  # jobs may run on several threads' loops at once (the shadow proxy's, a test's)
        if _paced_jobs == 0:
            _saved_thresholds = gc.get_threshold()
            _froze = gc.get_freeze_count() == 0  # a process that froze objects itself keeps them frozen
            if _froze:
                gc.freeze()
            gc.set_threshold(max(YOUNG_OBJECTS, _saved_thresholds[0]), *_saved_thresholds[1:])
        _paced_jobs += 1
    try:
        yield
    finally:
        with _pacing:
            _paced_jobs -= 1
            if _paced_jobs == 0:
                gc.set_threshold(*_saved_thresholds)
                if _froze:
                    gc.unfreeze()


async def run_workers(worker: Callable[[], Awaitable[None]], n: int) -> None:
    """Run ``n`` copies of the coroutine function ``worker`` until all return; the first failure cancels the
    rest and propagates once they have stopped."""
    tasks = [asyncio.ensure_future(worker()) for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def map_bounded(items: Iterable[T], work: Callable[[T], Awaitable[R]], n: int) -> list[R]:
    """``work(item)`` for every item with at most ``n`` in flight, results in the order of ``items``."""
    indexed = list(enumerate(items))
    results: dict[int, R] = {}
    source = iter(indexed)

    async def worker() -> None:
        for index, item in source:
            results[index] = await work(item)

    await run_workers(worker, max(1, min(n, len(indexed))))
    return [results[i] for i in range(len(indexed))]
