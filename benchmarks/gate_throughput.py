"""A gate against a mock OpenAI-compatible judge endpoint with a fixed latency: calls made vs the minimum, and
wall time vs the endpoint-limited ideal; then a warm re-run (a fresh gate on the same set: every call cached).

Every item needs its two judge calls (both orders); nothing else calls a model (targets are fake). At most
``--concurrency`` calls run at once at the endpoint, so C calls cannot finish faster than
``C * latency / concurrency``. We report calls/minimum and ideal/achieved.

    python benchmarks/gate_throughput.py --items 200 --concurrency 16 --latency-ms 100
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from ragreplay.core.gate import GatePolicy
from ragreplay.core.regset import STRATA, Candidate, RegressionSetRecord, SetItem
from ragreplay.gate.job import GateSides
from ragreplay.gate.run import run_gate
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_fit_judge, build_pairwise_judge
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.pricing import Price
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget
from replay_throughput import mock_requests, start_mock


def seed_set(store: Store, n: int) -> None:
    """A regression set of ``n`` items spread over the three strata."""
    items = []
    for i in range(n):
        c = Candidate(source="shadow", source_id=f"r{i}", question=f"How many leave days in policy {i}?")
        items.append(
            SetItem(
                key=c.key,
                stratum=STRATA[i % 3],
                candidate=c,
                cluster=i,
                inclusion_probability=1.0,
                count=1,
                weight=1.0,
            )
        )
    record = RegressionSetRecord(
        id="rs_bench", version=store.regsets.next_version(), created_at=datetime.now(UTC)
    )
    store.regsets.create_set(record, items)


async def gate_once(store: Store, base_url: str, concurrency: int, in_flight: int, fresh: bool) -> float:
    """One gate through the same code the CLI uses (``in_flight`` items at once, ``concurrency`` calls at
    once at the endpoint); returns the wall seconds."""
    settings = Settings(
        db=store.url,
        concurrency=in_flight,
        providers={"mock": ProviderConfig(base_url=base_url, max_concurrency=concurrency, max_retries=0)},
        prices={"mock:bench-judge": Price(2.0, 8.0)},
    )
    start, cpu = time.perf_counter(), time.process_time()
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env={})
        try:
            sides = GateSides(
                champion=FakeTarget({}, default="Twenty days.", name="champion"),
                challenger=FakeTarget({}, default="Twenty-five days a year.", name="challenger"),
                pairwise=build_pairwise_judge("mock:bench-judge", factory),
                fit_judge=build_fit_judge("mock:bench-judge", factory),
            )
            await run_gate(
                store=store,
                writer=writer,
                set_ref="latest",
                sides=sides,
                judge_spec="mock:bench-judge",
                fit_judge_spec="mock:bench-judge",
                policy=GatePolicy(),
                concurrency=in_flight,  # items at once, as the CLI passes settings.concurrency
                fresh=fresh,
            )
        finally:
            await factory.aclose()
    wall = time.perf_counter() - start
    print(f"client CPU {time.process_time() - cpu:.2f} s over {wall:.2f} s wall", file=sys.stderr)
    return wall


def main() -> None:
    """Run the benchmark and print a Markdown table row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument(
        "--in-flight", type=int, default=None, help="items at once [default: 2 x concurrency]"
    )
    parser.add_argument("--db", default=None, help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    base_url, mock = start_mock(args.latency_ms)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(args.db or str(Path(tmp) / "bench.db"))
        try:
            seed_set(store, args.items)
            before = mock_requests(base_url)
            in_flight = args.in_flight or 2 * args.concurrency
            seconds = asyncio.run(gate_once(store, base_url, args.concurrency, in_flight, fresh=True))
            calls = mock_requests(base_url) - before
            warm_seconds = asyncio.run(gate_once(store, base_url, args.concurrency, in_flight, fresh=True))
            warm_calls = mock_requests(base_url) - before - calls
        finally:
            store.close()
            mock.terminate()
            mock.wait(10)
    minimum = 2 * args.items
    ideal = minimum * (args.latency_ms / 1000) / args.concurrency
    print(
        "| items | concurrency | latency | judge calls | minimum | wall (s) | ideal (s) | ideal/achieved | "
        "warm calls | warm wall (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.items} | {args.concurrency} | {args.latency_ms:.0f} ms | {calls} | {minimum} | {seconds:.2f} | "
        f"{ideal:.2f} | {ideal / seconds:.3f} | {warm_calls} | {warm_seconds:.2f} |"
    )


if __name__ == "__main__":
    main()
