"""An event loop on virtual time: ``asyncio.sleep`` returns as soon as nothing else can run, with the clock moved
on, so concurrency and timing tests run instantly and exactly. For code that does no real I/O."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _NoWaitSelector(selectors.DefaultSelector):
    """Never blocks: a wait for a timer moves the loop's clock to that timer instead."""

    def __init__(self, loop: VirtualLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if not ready and timeout is not None and timeout > 0:
            self._loop.now += timeout
        return ready


class VirtualLoop(asyncio.SelectorEventLoop):
    """``time()`` is :attr:`now`, which only moves when every task waits on a timer."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(selector=_NoWaitSelector(self))

    def time(self) -> float:
        """The virtual clock."""
        return self.now


def run_virtual(coro: Coroutine[Any, Any, T]) -> tuple[T, float]:
    """Run ``coro`` on a fresh virtual loop; returns its result and the virtual seconds it took."""
    loop = VirtualLoop()
    try:
        result = loop.run_until_complete(coro)
        return result, loop.now
    finally:
        loop.close()


def clock() -> float:
    """The running virtual loop's clock (a ``clock`` argument for code under test)."""
    return asyncio.get_running_loop().time()
