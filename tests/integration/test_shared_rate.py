"""A provider's rate limit shared by several workers through the store: together they never go over it, and the
model stack waits for the shared bucket when a limit is configured (and only then)."""

from __future__ import annotations

import asyncio
import time

from ragreplay.core.chat import ChatMessage, ChatRequest
from ragreplay.jobs.shared_rate import StoreRateLimit
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.registry import ModelFactory
from ragreplay.store import Store


def test_workers_sharing_the_bucket_stay_within_the_limit_together(store: Store) -> None:
    rpm = 1200.0  # 20 a second; the bucket holds one second's worth
    workers = [StoreRateLimit(store.work_claims) for _ in range(3)]  # each as its own process would be
    sent: list[float] = []

    async def work(limit: StoreRateLimit, until: float) -> None:
        while time.monotonic() < until:
            await limit.acquire("p", rpm)
            sent.append(time.monotonic())

    async def main() -> float:
        started = time.monotonic()
        await asyncio.gather(*(work(w, started + 1.5) for w in workers))
        return time.monotonic() - started

    elapsed = asyncio.run(main())
    for limit in workers:
        limit.close()
    # the burst (20) plus the refill over the run: three workers never send more than one would be allowed
    assert len(sent) <= 20 + 20 * elapsed + 1
    assert len(sent) >= 20  # and they are not starved: at least the first second's worth went
    assert sum(w.store_calls for w in workers) < len(sent)  # tokens are taken a few at a time


class Spy:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    async def acquire(self, provider: str, requests_per_minute: float) -> None:
        self.calls.append((provider, requests_per_minute))


def test_the_model_stack_waits_for_the_shared_bucket_only_where_a_limit_is_set() -> None:
    settings = ModelSettings(
        providers={
            "slow": ProviderConfig(kind="fake", requests_per_minute=600),
            "free": ProviderConfig(kind="fake"),
        }
    )
    spy = Spy()
    factory = ModelFactory(settings, env={}, shared_rate=spy)
    request = ChatRequest(messages=[ChatMessage(role="user", content="hello")])

    async def main() -> None:
        await factory.build("slow:a").complete(request)
        await factory.build("slow:b").complete(request.model_copy(update={"temperature": 0.5}))
        await factory.build("free:a").complete(request)
        await factory.aclose()

    asyncio.run(main())
    assert spy.calls == [("slow", 600), ("slow", 600)]
