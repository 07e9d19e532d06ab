"""Several workers, one job: a job's items claimed from the store a batch at a time, under leases that expire.

Each worker process (``--workers``, on one machine or many sharing a PostgreSQL store) runs the job with a
:class:`ClaimFeed` as its plan's feed instead of its own list of items: the feed claims a batch of items the
job still has to do and nobody holds (:mod:`ragreplay.store.work_claims`), hands them to the runner's workers,
and releases each item's claim once its result is committed. A thread of its own renews the worker's leases
every third of a lease, whatever the event loop is doing. A worker that dies stops renewing: once its leases
end, the others take its items over, so a kill loses nothing and repeats only the calls it had in flight. A
worker ends when nothing is left to claim and no other worker holds a live claim (one that may still die).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ragreplay.store.work_claims import ClaimBatch, WorkClaimsRepository

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

DEFAULT_LEASE_S = 60.0
"""How long a claim lasts without renewal: a dead worker's items wait this long before another takes them."""
MIN_LEASE_S = 1.0


def worker_id() -> str:
    """A worker's name, unique across machines: ``host:pid:random``."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{secrets.token_hex(3)}"


class ItemFeed(Protocol[T_co]):
    """Where a job's items come from when several workers share it (see :class:`ClaimFeed`)."""

    async def take(self) -> tuple[bool, T_co | None]:
        """``(True, item)`` for the next item, ``(False, None)`` once there are none left."""
        ...

    def finished(self, item: Any, result: Any = None) -> None:
        """``item``'s result (``result``) is committed: its claim may go."""
        ...

    async def close(self) -> None:
        """Stop: what this worker still holds is released at once, for others to take."""
        ...


@dataclass
class StoreQueue(Generic[T]):
    """One job's queue in the store as one worker sees it: ``claim_batch(n, after)`` claims for this worker
    (a :class:`~ragreplay.store.work_claims.WorkClaimsRepository` method bound to the job's filters), ``key``
    names an item. Keeps the worker's cursor; once the cursor reaches the end it scans once more from the start
    (an item another worker skipped while it was locked, then let go, is found there)."""

    repo: WorkClaimsRepository
    queue: str
    worker: str
    claim_batch: Callable[[int, Any], ClaimBatch[T]]
    key: Callable[[T], str]
    after: Any = None
    rescanned: bool = field(default=False)

    def claim(self, n: int) -> tuple[list[T], int]:
        """Up to ``n`` items for this worker, and how many items others hold under live leases."""
        batch = self.claim_batch(n, self.after)
        if not batch.items and not self.rescanned and self.after is not None:
            self.rescanned = True
            batch = self.claim_batch(n, None)
        self.after = batch.after if batch.after is not None else self.after
        return batch.items, batch.others_live


class ClaimFeed(Generic[T]):
    """A job's items claimed from a :class:`StoreQueue` in batches of ``batch`` (the next batch claimed in the
    background when fewer than half a batch are left), at most ``limit`` in all; leases of ``lease_s`` renewed
    every third of it in a thread; claims of finished items released within ``tick_s``."""

    def __init__(
        self,
        queue: StoreQueue[T],
        batch: int = 16,
        lease_s: float = DEFAULT_LEASE_S,
        limit: int | None = None,
        poll_s: float | None = None,
        parks: Callable[[Any], bool] | None = None,
    ) -> None:
        if lease_s < MIN_LEASE_S:
            raise ValueError(f"a lease must last at least {MIN_LEASE_S} s")
        self.queue = queue
        self.parks = parks
        self.batch = max(1, batch)
        self.lease_s = lease_s
        self.limit = limit
        self.poll_s = poll_s if poll_s is not None else min(1.0, lease_s / 4)
        self.tick_s = min(1.0, lease_s / 6)
        self.claimed = 0
        self.renewals = 0
        self.renew_error: BaseException | None = None
        self._ready: deque[T] = deque()
        self._exhausted = False
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragreplay-claims")
        self._finished: list[str] = []
        self._parked: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._keep_leases, name="ragreplay-leases", daemon=True)
        self._keeper.start()

    async def take(self) -> tuple[bool, T | None]:
        """``(True, item)`` for the next item claimed, ``(False, None)`` once nothing is left to claim and no
        other worker holds a live claim. A claim that failed (the store) raises here."""
        while not self._ready:
            if self._error is not None:
                raise self._error
            if self._exhausted:
                return False, None
            await asyncio.shield(self._claiming())
        item = self._ready.popleft()
        if len(self._ready) < (self.batch + 1) // 2 and not self._exhausted:
            self._claiming()
        return True, item

    def finished(self, item: Any, result: Any = None) -> None:
        """``item``'s result is committed: its claim is deleted with the next tick, or parked when ``parks``
        says the result failed (not to be claimed again in this attempt of the job:
        :meth:`~ragreplay.store.work_claims.WorkClaimsRepository.park`)."""
        with self._lock:
            if self.parks is not None and self.parks(result):
                self._parked.append(self.queue.key(item))
            else:
                self._finished.append(self.queue.key(item))

    async def close(self) -> None:
        """Stop claiming and renewing; release this worker's claims (finished items, and those it had not
        finished: they are free for others at once rather than when the lease ends)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._stop.set()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._keeper.join)
        try:
            await loop.run_in_executor(self._executor, self._release_all)
        finally:
            self._executor.shutdown(wait=True)

    def _claiming(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._claim())
        return self._task

    async def _claim(self) -> None:
        try:
            n = self.batch if self.limit is None else min(self.batch, self.limit - self.claimed)
            if n <= 0:
                self._exhausted = True
                return
            loop = asyncio.get_running_loop()
            items, others_live = await loop.run_in_executor(self._executor, self.queue.claim, n)
            self.claimed += len(items)
            self._ready.extend(items)
            if not items:
                if others_live:
                    await asyncio.sleep(self.poll_s)  # their items may come free when their leases end
                else:
                    self._exhausted = True
        except Exception as exc:  # a claim made ahead of need that failed is raised by the next take()
            self._error = exc
            raise
        finally:
            self._task = None

    def _keep_leases(self) -> None:
        renewed = time.monotonic()
        while not self._stop.wait(self.tick_s):
            try:
                self._release_finished()
                if time.monotonic() - renewed >= self.lease_s / 3:
                    self.queue.repo.renew(self.queue.queue, self.queue.worker, self.lease_s)
                    renewed = time.monotonic()
                    self.renewals += 1
            except Exception as exc:  # the store is away: try again next tick; the leases may run out
                self.renew_error = exc

    def _release_finished(self) -> None:
        with self._lock:
            done, self._finished = self._finished, []
            parked, self._parked = self._parked, []
        if parked:
            self.queue.repo.park(self.queue.queue, self.queue.worker, parked)
        if done:
            self.queue.repo.release(self.queue.queue, self.queue.worker, done)

    def _release_all(self) -> None:
        self._release_finished()
        self.queue.repo.release(self.queue.queue, self.queue.worker)
