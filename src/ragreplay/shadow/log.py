"""The shadow log: rows (and live feedback) queue in memory and a background task writes them to the store in
batches.

Nothing here ever raises to the caller or waits on the store on the caller's path. When the queue is full an
item is dropped; when a batch cannot be written (store down) its items are lost. Both are counted, and the log
keeps going: the next batch is tried as usual. So ``written == offered - dropped - lost - pending``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ragreplay.core.shadow import ShadowFeedback, ShadowRow
from ragreplay.core.storable import storable
from ragreplay.store.connect import is_row_error

logger = logging.getLogger(__name__)


class ShadowRowSink(Protocol):
    """Where the log writes rows: the store's ``shadow_rows`` repository, or a fake in tests."""

    def write_shadow_rows(self, rows: Sequence[ShadowRow]) -> None:
        """Write ``rows`` in one transaction; rows whose id exists already are skipped."""
        ...


class ShadowFeedbackSink(Protocol):
    """Where live feedback is written: the store's ``shadow_feedback`` repository, or a fake in tests."""

    def write_shadow_feedback(self, items: Sequence[ShadowFeedback]) -> None:
        """Write ``items`` in one transaction; per request the latest label wins."""
        ...


class SecretKeeper(Protocol):
    """Where the shadow keeps its user-id salt: the store's ``secrets`` repository, or a fake in tests."""

    def get_or_create(self, name: str, make: Callable[[], str]) -> tuple[str, bool]:
        """The secret ``name`` (made and kept on first use) and whether this call made it."""
        ...


class ShadowLogStore(Protocol):
    """What the shadow logs write to: a :class:`~ragreplay.store.Store` (its two shadow repositories, and the
    secrets repository that keeps the user-id salt)."""

    @property
    def shadow_rows(self) -> ShadowRowSink:
        """Where rows go."""
        ...

    @property
    def shadow_feedback(self) -> ShadowFeedbackSink:
        """Where live feedback goes."""
        ...

    @property
    def secrets(self) -> SecretKeeper:
        """Where the user-id salt is kept."""
        ...


T = TypeVar("T")


@dataclass(frozen=True)
class LogStats:
    """The log's counters at one moment."""

    offered: int
    written: int
    dropped: int
    lost: int
    pending: int
    last_error: str | None
    made_storable: int = 0
    """Items written with characters no store keeps (NUL, lone surrogates) replaced."""


class BatchLog(Generic[T]):
    """A bounded queue of items handed to ``write`` by a background task, ``batch_size`` at a time.

    ``write`` is called in a worker thread, so a slow store never blocks the event loop. The task starts on
    the first :meth:`offer` made inside a running event loop.
    """

    def __init__(
        self,
        write: Callable[[Sequence[T]], None],
        batch_size: int = 200,
        flush_interval_s: float = 0.2,
        max_queue: int = 10_000,
        name: str = "shadow log",
        prepare: Callable[[T], tuple[T, int]] | None = None,
    ) -> None:
        if batch_size < 1 or max_queue < 1 or flush_interval_s <= 0:
            raise ValueError("batch_size and max_queue must be >= 1 and flush_interval_s > 0")
        self._write_batch = write
        self._prepare = prepare
        self._name = name
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._max_queue = max_queue
        self._queue: deque[T] = deque()
        self._in_write = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False
        self.offered = 0
        self.written = 0
        self.dropped = 0
        self.lost = 0
        self.made_storable = 0
        self.last_error: str | None = None

    def offer(self, item: T) -> bool:
        """Queue ``item`` for writing; ``False`` (and counted as dropped) when the queue is full or closed."""
        self.offered += 1
        if self._closing or len(self._queue) >= self._max_queue:
            self.dropped += 1
            return False
        self._queue.append(item)
        if self._task is None:
            self._start()
        if len(self._queue) >= self._batch_size and self._wake is not None:
            self._wake.set()
        return True

    def stats(self) -> LogStats:
        """The counters now."""
        return LogStats(
            offered=self.offered,
            written=self.written,
            dropped=self.dropped,
            lost=self.lost,
            pending=len(self._queue) + self._in_write,
            last_error=self.last_error,
            made_storable=self.made_storable,
        )

    async def aclose(self, timeout_s: float = 5.0) -> None:
        """Write what is queued, for at most ``timeout_s``; rows still unwritten then count as lost.

        A batch already handed to the store when time runs out may still land in it, but counts as lost.
        """
        self._closing = True
        if self._task is None and self._queue:
            self._start()
        if self._task is not None:
            assert self._wake is not None
            self._wake.set()
            done, _ = await asyncio.wait({self._task}, timeout=timeout_s)
            if not done:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None
        unwritten = len(self._queue)
        if unwritten:
            self.lost += unwritten
            logger.warning("%s closed with %d item(s) unwritten", self._name, unwritten)
        self._queue.clear()
        self._in_write = 0
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    def _start(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: the rows wait for the next offer inside one, or for aclose
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ragreplay-{self._name}")
        self._task = loop.create_task(self._run(), name=f"ragreplay-{self._name}")

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            if len(self._queue) < self._batch_size and not self._closing:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._interval)
            self._wake.clear()
            while self._queue:
                if not await self._write_one_batch() and not self._closing:
                    break  # the store failed: wait a tick before trying the next batch
            if self._closing and not self._queue:
                return

    async def _write_one_batch(self) -> bool:
        n = min(self._batch_size, len(self._queue))
        batch = [self._queue.popleft() for _ in range(n)]
        self._in_write = n
        loop = asyncio.get_running_loop()
        try:
            lost = await loop.run_in_executor(self._executor, self._write_safely, batch)
        except Exception as exc:  # a store failure must never stop the log
            self.lost += n
            if self.last_error is None or not self.last_error.startswith(type(exc).__name__):
                logger.warning("%s: %d item(s) lost, the store failed: %s", self._name, n, exc)
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        except asyncio.CancelledError:  # aclose ran out of time while this batch was with the store
            self.lost += n
            raise
        else:
            self.written += n - lost
            self.lost += lost
            return True
        finally:
            self._in_write = 0

    def _write_safely(self, batch: list[T]) -> int:
        """Write ``batch`` (in the worker thread), its text made storable first; when the store refuses the
        batch for something in its rows (not for being down), write the rows one by one so only a truly bad
        row is lost. Returns how many were lost; a store that is down raises."""
        if self._prepare is not None:
            prepared = []
            for item in batch:
                fixed, n = self._prepare(item)
                self.made_storable += n > 0
                prepared.append(fixed)
            batch = prepared
        try:
            self._write_batch(batch)
            return 0
        except Exception as exc:
            if len(batch) == 1 or not is_row_error(exc):
                raise
            first_error = exc
        lost = 0
        for item in batch:
            try:
                self._write_batch([item])
            except Exception as exc:
                if not is_row_error(exc):
                    raise
                lost += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
        if lost:
            logger.warning("%s: %d row(s) refused by the store and lost: %s", self._name, lost, first_error)
        return lost


def storable_row(row: ShadowRow) -> tuple[ShadowRow, int]:
    """``row`` with its text made storable (see :mod:`ragreplay.core.storable`), and the characters replaced."""
    data, n = storable(row.model_dump())
    return (ShadowRow.model_validate(data), n) if n else (row, 0)


def storable_feedback(item: ShadowFeedback) -> tuple[ShadowFeedback, int]:
    """Live feedback with its comment and request id made storable."""
    data, n = storable(item.model_dump())
    return (ShadowFeedback.model_validate(data), n) if n else (item, 0)


class ShadowLog(BatchLog[ShadowRow]):
    """The log of shadow rows, written to ``store`` (``store.shadow_rows.write_shadow_rows``)."""

    def __init__(
        self,
        store: ShadowLogStore,
        batch_size: int = 200,
        flush_interval_s: float = 0.2,
        max_queue: int = 10_000,
    ) -> None:
        super().__init__(
            store.shadow_rows.write_shadow_rows,
            batch_size,
            flush_interval_s,
            max_queue,
            "shadow log",
            prepare=storable_row,
        )
        self.store = store


class FeedbackLog(BatchLog[ShadowFeedback]):
    """The log of live feedback, written to ``store`` (``store.shadow_feedback.write_shadow_feedback``)."""

    def __init__(
        self,
        store: ShadowLogStore,
        batch_size: int = 200,
        flush_interval_s: float = 0.2,
        max_queue: int = 10_000,
    ) -> None:
        super().__init__(
            store.shadow_feedback.write_shadow_feedback,
            batch_size,
            flush_interval_s,
            max_queue,
            "feedback log",
            prepare=storable_feedback,
        )
        self.store = store
