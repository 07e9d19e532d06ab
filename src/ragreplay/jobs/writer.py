"""The jobs' one writer: writes from many coroutines are flushed together, one transaction per tick.

Each coroutine awaits the commit of its own write before it goes on, so the order "answer saved, then judged"
still holds on disk, and a kill loses at most the calls in flight. Batching is what keeps a replay bound by the
model endpoint rather than by per-row transactions on a 2-core machine.

The writer is also the model cache's backend: a response waiting to be flushed is already readable, so two
cases asking the same question a millisecond apart make one call. It reads the store's keys once
(:class:`~ragreplay.jobs.known_keys.KnownKeys`), so a call whose key is not stored (every call of a cold run)
costs no lookup; a response another process caches meanwhile is not seen, and at worst paid again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

from ragreplay.core.comparisons import ComparisonRowRecord
from ragreplay.core.runs import ResultRecord
from ragreplay.core.shadow import ShadowJudgmentRecord
from ragreplay.core.types import Rewrite
from ragreplay.jobs.known_keys import KnownKeys
from ragreplay.store import Store
from ragreplay.store.batch import CacheEntry, WriteBatch
from ragreplay.store.evals import EvalRowRecord
from ragreplay.store.gates import GateItemRecord
from ragreplay.store.review_judgments import ReviewJudgmentRecord

GATHER_S = 0.005
"""How long a tick waits for more writes to join its transaction, unless ``GATHER_UNTIL`` are queued already."""
GATHER_UNTIL = 64


class StoreWriter:
    """Gathers writes and applies them in a background thread, one :class:`WriteBatch` at a time."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._batch = WriteBatch()
        self._waiters: list[asyncio.Future[dict[tuple[str, str], Rewrite]]] = []
        self._pending_cache: dict[str, Mapping[str, Any]] = {}
        self._known: KnownKeys | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragreplay-writer")
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.batches = 0

    async def __aenter__(self) -> StoreWriter:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the model cache backend (called synchronously by CachedModel on the event loop's thread)
    def cache_get(self, key: str) -> Mapping[str, Any] | None:
        """A cached response: one still waiting to be flushed, or one in the store."""
        pending = self._pending_cache.get(key)
        if pending is not None:
            return pending
        if self._known is None:
            self._known = KnownKeys(self._store.cache.iter_keys())
        return self._store.cache.cache_get(key) if self._known.may_hold(key) else None

    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        """Queue a response for the cache; it is readable at once and flushed with the next batch."""
        if key in self._pending_cache:
            return
        self._pending_cache[key] = response
        if self._known is not None:
            self._known.add(key)
        self._batch.cache.append(CacheEntry(key, model, request, response))
        self._kick()

    # -- the engine's writes
    async def save_result(self, result: ResultRecord) -> None:
        """Save one case's result row; returns once it is committed."""
        self._batch.results.append(result)
        await self._commit()

    async def pin_rewrite(self, case_id: str, rewrite: Rewrite, rewriter: str) -> Rewrite:
        """Pin ``rewrite`` to a case for ``rewriter`` unless it pinned one already; return the pinned one once
        committed."""
        self._batch.pins.append((case_id, rewriter, rewrite))
        return (await self._commit())[case_id, rewriter]

    async def save_comparison_rows(self, rows: Sequence[ComparisonRowRecord]) -> None:
        """Save one case's comparison rows (one per challenger); returns once they are committed."""
        self._batch.comparison_rows.extend(rows)
        await self._commit()

    async def save_gate_items(self, items: Sequence[GateItemRecord]) -> None:
        """Save gate item outcomes; returns once committed."""
        self._batch.gate_items.extend(items)
        await self._commit()

    async def save_review_judgments(self, records: Sequence[ReviewJudgmentRecord]) -> None:
        """Save judgments of review items (by judge version); returns once committed."""
        self._batch.review_judgments.extend(records)
        await self._commit()

    async def save_shadow_judgments(self, records: Sequence[ShadowJudgmentRecord]) -> None:
        """Save shadow judgments and mark their rows judged; returns once committed."""
        self._batch.shadow_judgments.extend(records)
        await self._commit()

    async def save_eval_rows(self, rows: Sequence[EvalRowRecord]) -> None:
        """Save eval rows' scores; returns once committed."""
        self._batch.eval_rows.extend(rows)
        await self._commit()

    async def aclose(self) -> None:
        """Flush everything queued, then stop the background task and thread."""
        self._closing = True
        if self._task is not None:
            self._kick()
            await asyncio.shield(self._task)
            self._task = None
        self._executor.shutdown(wait=True)

    def _commit(self) -> asyncio.Future[dict[tuple[str, str], Rewrite]]:
        future: asyncio.Future[dict[tuple[str, str], Rewrite]] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._kick()
        return future

    def _kick(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        assert self._wake is not None
        self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            if not self._closing and len(self._batch) < GATHER_UNTIL:
                # Against a slow endpoint answers trickle in: a commit of one row costs a transaction and a
                # thread hop; waiting a moment lets the writes of many cases share one.
                await asyncio.sleep(GATHER_S)
            self._wake.clear()
            batch, waiters = self._batch, self._waiters
            self._batch, self._waiters = WriteBatch(), []
            if len(batch):
                try:
                    pinned = await loop.run_in_executor(self._executor, self._store.write_batch, batch)
                except Exception as exc:  # the store failed: every writer of this batch hears of it
                    if self._closing:
                        # nobody will wake this task again: whoever queued writes since hears of it too
                        waiters, self._waiters = [*waiters, *self._waiters], []
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_exception(exc)
                    if self._closing:
                        return
                    continue
                self.batches += 1
                for entry in batch.cache:
                    self._pending_cache.pop(entry.key, None)
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_result(pinned)
            if self._closing and not len(self._batch):
                return
