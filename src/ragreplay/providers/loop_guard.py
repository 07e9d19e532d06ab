"""Closing a pool of connections with the event loop it belongs to.

Connections belong to the loop they were opened in, while models are built outside any loop and one process may
run several loops (``asyncio.run`` per CLI call). Both HTTP clients of the OpenAI-compatible provider
(:mod:`ragreplay.providers.http11_pool` and the aiohttp one) tie their per-loop pool to its loop with a guard:
an async generator started in that loop, which ``asyncio.run`` closes (inside the loop) before closing the
loop, and whose closing closes the pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Protocol


class Closeable(Protocol):
    """Anything with an awaitable ``close()``: an aiohttp session, a pool of connections."""

    async def close(self) -> None:
        """Close every connection."""


async def closed_with_loop(resource: Closeable) -> AsyncGenerator[None, None]:
    """Waits at its ``yield`` until closed; closing it closes ``resource``.

    Once started it is one of its loop's async generators, which ``asyncio.run`` closes (inside that loop)
    before closing the loop, so a pool whose owner never closed it does not leak its connections.
    """
    try:
        yield
    finally:
        await resource.close()


async def guard(resource: Closeable) -> AsyncGenerator[None, None]:
    """A started :func:`closed_with_loop` guard of ``resource`` (it runs to its yield without suspending)."""
    started = closed_with_loop(resource)
    await started.__anext__()
    return started


async def retire(guard: AsyncGenerator[None, None] | None, loop: asyncio.AbstractEventLoop | None) -> None:
    """Close a replaced pool's guard, unless the pool belongs to another loop that still runs."""
    if guard is None or loop is None:
        return
    if loop is asyncio.get_running_loop() or loop.is_closed():
        # On a closed loop the connections are gone already (asyncio.run closed the guard) or cannot be
        # reached; closing then only marks the pool closed, with no await on the dead loop.
        await guard.aclose()
    # Otherwise the pool's own loop closes it: when the generator is collected or the loop shuts down.
