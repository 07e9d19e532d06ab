"""A job's items read ahead in a thread of their own, a chunk at a time.

A job whose items come from the store (the cases of a replay, the unjudged rows of the shadow log) reads and
parses a page of them whenever its iterator runs dry: tens of milliseconds in which, on the event loop, no reply
is read and no request is sent, while every call in flight waits. Read in a thread, a chunk ahead of the workers,
the page is ready when it is needed, and the loop only waits for it when the workers outrun the reads.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Generic, TypeVar

T = TypeVar("T")

FIRST_CHUNK = 8
"""Items in the first chunk; each chunk after it is twice the one before, up to :data:`CHUNK`. The first
workers get their items (and send their first requests) while the next chunk is read, rather than every worker
starting in the same turn of the event loop."""
CHUNK = 128
"""Items taken from the iterator in one go, in the reading thread."""


class ReadAhead(Generic[T]):
    """The items of ``iterable``, advanced only in one reading thread, handed out by :meth:`take`.

    The next chunk is asked for as soon as the one before arrives. Whatever the iterator raises is raised by
    :meth:`take`; :meth:`close` waits for a read in progress, so nothing reads the store after the job.
    """

    def __init__(self, iterable: Iterable[T], chunk: int = CHUNK) -> None:
        self._source: Iterator[T] = iter(iterable)
        self._max_chunk = chunk
        self._chunk = min(FIRST_CHUNK, chunk)
        self._ready: deque[T] = deque()
        self._reading: asyncio.Future[list[T]] | None = None
        self._exhausted = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragreplay-reader")

    def _read(self, size: int) -> list[T]:
        return list(islice(self._source, size))

    def _ask(self) -> asyncio.Future[list[T]]:
        if self._reading is None:
            self._reading = asyncio.get_running_loop().run_in_executor(
                self._executor, self._read, self._chunk
            )
        return self._reading

    async def take(self) -> tuple[bool, T | None]:
        """``(True, item)`` for the next item, ``(False, None)`` once there are none left."""
        while not self._ready:
            if self._exhausted:
                return False, None
            reading = self._ask()
            chunk = await reading
            if self._reading is reading:  # the first of the workers that waited for this chunk takes it in
                self._reading = None
                self._ready.extend(chunk)
                self._exhausted = len(chunk) < self._chunk
                if not self._exhausted:
                    self._chunk = min(2 * self._chunk, self._max_chunk)
                    self._ask()
        return True, self._ready.popleft()

    async def close(self) -> None:
        """Stop reading: wait for a read in progress (its items are dropped), then end the thread."""
        reading, self._reading = self._reading, None
        if reading is not None:
            await asyncio.gather(reading, return_exceptions=True)
        self._executor.shutdown(wait=True)
