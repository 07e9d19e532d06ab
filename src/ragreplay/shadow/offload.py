"""The shadow's heavy work off the event loop: reading and redacting large bodies in a worker process.

The proxy's event loop serves every user. Parsing and redacting a sampled 15 MB question on it stalls all of
them for seconds (issue 12), so work on more than :data:`HEAVY_CHARS` of text goes to one worker process
that runs at a lower CPU priority (``python -m ragreplay.shadow.offload_worker``, fed pickles over a pipe; not
``multiprocessing``, which would run the app's ``__main__`` script again in it). A thread would not do: a
regex or JSON scan is one C call that holds the GIL from start to end, so the loop would still wait for it.
Work on less text stays inline, where it costs less than the trip (about 1-2 ms of redaction at the limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any, TypeVar

HEAVY_CHARS = 8 << 10
"""Text (or bytes) of at least this size is parsed and redacted in the worker process."""
MAX_PENDING = 4
"""The proxy reads at most this many large exchanges at once; more are left out (``too_busy``), not queued."""
WORKER_NICE = 10
"""How much lower the worker's CPU priority is: the proxy's own process wins the cores."""

R = TypeVar("R")
_LENGTH = struct.Struct("!Q")


class WorkerFailed(RuntimeError):
    """The worker process died or could not be started; the next call starts a fresh one."""


def portable(obj: object) -> bool:
    """Whether ``obj`` (a function, say) can be sent to the worker process: importable by name from a module
    other than ``__main__`` (the worker does not run the app's script), not a lambda or a closure."""
    if getattr(obj, "__module__", None) == "__main__":
        return False
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


def send(pipe: IO[bytes], obj: object) -> None:
    """Write ``obj`` to ``pipe`` as one length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_LENGTH.pack(len(data)))
    pipe.write(data)
    pipe.flush()


def receive(pipe: IO[bytes]) -> Any:
    """Read one length-prefixed pickle from ``pipe``; ``EOFError`` when it closed."""
    head = pipe.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = pipe.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class _Worker:
    """One worker process, called from one thread at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragreplay.shadow.offload_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._to, self._from = self.proc.stdin, self.proc.stdout

    def call(self, fn: Callable[..., R], args: tuple[Any, ...]) -> R:
        try:
            send(self._to, (fn, args))
            ok, value = receive(self._from)
        except (OSError, EOFError) as exc:
            raise WorkerFailed(f"the shadow's offload worker failed: {exc!r}") from None
        if not ok:
            raise value
        result: R = value
        return result

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()


class Offload:
    """Runs functions of large inputs away from the event loop: in one worker process (started on first use),
    or in a thread when the function cannot be sent there (a closure, or a function of ``__main__``); the
    thread keeps the loop's own code running but shares the GIL with it. The round trip to the worker (the
    pickling included) runs in that thread too, never on the loop.

    :meth:`heavy` says whether an input is large enough to be worth it. If the worker dies (killed for memory,
    say) the call raises :class:`WorkerFailed` and the next one starts a fresh worker. The worker exits when
    this process does, even when killed (its input pipe closes).
    """

    def __init__(self, heavy_chars: int = HEAVY_CHARS, max_pending: int = MAX_PENDING) -> None:
        self.heavy_chars = heavy_chars
        self.max_pending = max_pending
        self.pending = 0
        self.runs = 0
        self._thread: ThreadPoolExecutor | None = None
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def heavy(self, size: int) -> bool:
        """Whether work on ``size`` characters (or bytes) belongs off the event loop."""
        return size >= self.heavy_chars

    async def run(self, fn: Callable[..., R], *args: Any, in_process: bool = True) -> R:
        """``fn(*args)``, computed in the worker process (``in_process``: ``fn`` and ``args`` must pickle, see
        :func:`portable`) or in the thread."""
        loop = asyncio.get_running_loop()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="ragreplay-shadow-offload")
        self.pending += 1
        try:
            if in_process:
                result: R = await loop.run_in_executor(self._thread, self._in_worker, fn, args)
            else:
                result = await loop.run_in_executor(self._thread, fn, *args)
            self.runs += 1
            return result
        finally:
            self.pending -= 1

    def close(self) -> None:
        """Stop the worker process at once (what it is doing is for calls nobody awaits any more) and the
        thread (work not started is cancelled)."""
        thread, worker = self._thread, self._worker
        self._thread = self._worker = None
        if worker is not None:
            worker.stop()
        if thread is not None:
            thread.shutdown(wait=False, cancel_futures=True)

    def _in_worker(self, fn: Callable[..., R], args: tuple[Any, ...]) -> R:
        with self._lock:
            if self._worker is None or self._worker.proc.poll() is not None:
                self._worker = _Worker()
            worker = self._worker
        try:
            return worker.call(fn, args)
        except WorkerFailed:
            with self._lock:
                if self._worker is worker:
                    self._worker = None
            worker.stop()
            raise
