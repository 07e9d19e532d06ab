"""The shadow's heavy work off the event loop: reading and redacting large bodies in a worker process.

The proxy's event loop serves every user. Parsing and redacting a sampled 15 MB question on it stalls all of
them for seconds (issue 12), so work on more than :data:`HEAVY_CHARS` of text goes to one worker process
that runs at a lower CPU priority. A thread would not do: a regex or JSON scan is one C call that holds the
GIL from start to end, so the loop would still wait for it. Work on less text stays inline, where it costs
less than the trip (about 1-2 ms of redaction at the limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

HEAVY_CHARS = 8 << 10
"""Text (or bytes) of at least this size is parsed and redacted in the worker process."""
MAX_PENDING = 4
"""The proxy reads at most this many large exchanges at once; more are left out (``too_busy``), not queued."""
WORKER_NICE = 10
"""How much lower the worker's CPU priority is: the proxy's own process wins the cores."""

R = TypeVar("R")


def _start_worker(parent: int) -> None:
    """Run in the worker when it starts: lower its priority, and make it exit when ``parent`` is gone."""
    with contextlib.suppress(AttributeError, OSError):  # no os.nice on Windows
        os.nice(WORKER_NICE)
    # A pool's worker holds both ends of its own task pipe, so a parent killed outright (SIGKILL, OOM) would
    # leave it waiting for work forever.
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent-watch").start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def portable(obj: object) -> bool:
    """Whether ``obj`` (a function, say) can be sent to a worker process: importable by name, not a lambda or
    a closure."""
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


class Offload:
    """Runs functions of large inputs away from the event loop: in one worker process (started on first use,
    ``spawn`` so that it shares no lock or thread with the server), or in a thread when the function cannot
    be sent there (a closure); the thread keeps the loop's own code running but shares the GIL with it.

    :meth:`heavy` says whether an input is large enough to be worth it. If the worker dies (killed for memory,
    say) the call raises and the next one starts a fresh worker.
    """

    def __init__(
        self, heavy_chars: int = HEAVY_CHARS, max_pending: int = MAX_PENDING, processes: int = 1
    ) -> None:
        self.heavy_chars = heavy_chars
        self.max_pending = max_pending
        self.processes = processes
        self.pending = 0
        self.runs = 0
        self._pool: ProcessPoolExecutor | None = None
        self._threads: ThreadPoolExecutor | None = None

    def heavy(self, size: int) -> bool:
        """Whether work on ``size`` characters (or bytes) belongs off the event loop."""
        return size >= self.heavy_chars

    async def run(self, fn: Callable[..., R], *args: Any, in_process: bool = True) -> R:
        """``fn(*args)``, computed in the worker process (``in_process``; ``fn`` and ``args`` must pickle) or in
        a thread."""
        loop = asyncio.get_running_loop()
        executor = self._process_pool() if in_process else self._thread_pool()
        self.pending += 1
        try:
            result: R = await loop.run_in_executor(executor, fn, *args)
            self.runs += 1
            return result
        except BrokenProcessPool:
            if self._pool is executor:
                self._pool = None  # the next call starts a fresh worker
            raise
        finally:
            self.pending -= 1

    def close(self) -> None:
        """Stop the worker process and the thread (work not started is cancelled)."""
        pools: list[Executor | None] = [self._pool, self._threads]
        self._pool = self._threads = None
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def _process_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(os.getpid(),),
            )
        return self._pool

    def _thread_pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(1, thread_name_prefix="ragreplay-shadow-offload")
        return self._threads
