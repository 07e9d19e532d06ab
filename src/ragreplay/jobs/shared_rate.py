"""A provider's ``requests_per_minute`` shared by every worker of a job, through a token bucket in the store.

Why a bucket in the store rather than each worker taking a share (the limit divided by the number of workers):
the bucket holds whatever the workers' number, their machines and their pace, so a worker that starts late,
finishes early or dies leaves its part to the others at once, and the fleet never goes over the limit. Each
worker takes tokens a few at a time (a quarter of a second's worth of the rate, at least one), so it asks the
store at most about four times a second per provider, and the fleet's burst is the bucket's one second.

The endpoint's own ``x-ratelimit-*`` headers and its 429s still pace each worker as before
(:mod:`ragreplay.providers.rate_learning`): they describe the shared limit already.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor

from ragreplay.store.work_claims import WorkClaimsRepository

BLOCK_S = 0.25
"""Seconds of the rate taken from the store at once."""
BURST_S = 1.0
"""The shared bucket's capacity, in seconds of the rate."""
MIN_WAIT_S = 0.01


class StoreRateLimit:
    """:class:`~ragreplay.ports.SharedRateLimit` over the store's ``rate_buckets`` (one per provider)."""

    def __init__(self, claims: WorkClaimsRepository) -> None:
        self._claims = claims
        self._stock: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragreplay-rate")
        self.store_calls = 0

    async def acquire(self, provider: str, requests_per_minute: float) -> None:
        """Wait until one more request to ``provider`` fits the limit every worker shares."""
        rate = requests_per_minute / 60.0
        lock = self._locks.setdefault(provider, asyncio.Lock())
        async with lock:
            while self._stock.get(provider, 0.0) < 1:
                want = max(1, math.floor(rate * BLOCK_S))
                capacity = max(1.0, rate * BURST_S)
                loop = asyncio.get_running_loop()
                taken, wait = await loop.run_in_executor(
                    self._executor, self._claims.take_tokens, f"provider:{provider}", want, rate, capacity
                )
                self.store_calls += 1
                self._stock[provider] = self._stock.get(provider, 0.0) + taken
                if not taken:
                    await asyncio.sleep(max(wait, MIN_WAIT_S))
            self._stock[provider] -= 1

    def close(self) -> None:
        """End the thread that talks to the store."""
        self._executor.shutdown(wait=True)
