"""Replay throughput against a mock OpenAI-compatible endpoint with a fixed latency, then a warm-cache re-run.

The ideal is endpoint-limited: every model call takes the fixed latency and at most ``--concurrency`` run at
once,
so a run of C calls cannot finish faster than ``C * latency / concurrency``. We report achieved/ideal.

    python benchmarks/replay_throughput.py --cases 2000 --concurrency 32 --latency-ms 100

With ``--rate-limit R`` the endpoint also limits requests to ``R`` a second (``--error-rate``: a share of them
answered 500) and the run uses the default provider settings (``--rpm``: ``requests_per_minute``). Then the
floor is the limit's: the completions a run needs (1.5 a case) cannot take less than ``completions / R``; the
row says how many cases got a verdict, how many requests the endpoint rejected (429) and wall against floor.

    python benchmarks/replay_throughput.py --cases 500 --rate-limit 20 --error-rate 0.05 --latency-ms 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from ragreplay.core.ids import case_id
from ragreplay.core.runs import ResultStatus, SourceRecord
from ragreplay.core.types import Case, Conversation, Feedback, Message, Role, Skip
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.pricing import Price
from ragreplay.replay.replay_run import replay, select_cases
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget


def synthetic_items(n_cases: int) -> list[tuple[Conversation, list[Case], list[Skip]]]:
    """``n_cases`` labelled turns in two-turn conversations; every second case is a follow-up (one rewrite call)."""
    items: list[tuple[Conversation, list[Case], list[Skip]]] = []
    for i in range((n_cases + 1) // 2):
        q1, a1 = f"What is policy {i}?", f"Policy {i} grants {i % 30} days."
        q2, a2 = f"Does it apply to team {i}?", f"Yes, team {i} is covered."
        msgs = (
            Message(role=Role.HUMAN, content=q1),
            Message(role=Role.AI, content=a1, feedback=Feedback.GOOD),
            Message(role=Role.HUMAN, content=q2),
            Message(role=Role.AI, content=a2, feedback=Feedback.BAD),
        )
        conv = Conversation(id=f"c{i:05d}", messages=msgs)
        cases = [
            Case(
                id=case_id(conv.id, 1, q1, a1),
                conversation_id=conv.id,
                turn_index=1,
                query=q1,
                history=(),
                old_answer=a1,
                feedback=Feedback.GOOD,
            ),
            Case(
                id=case_id(conv.id, 3, q2, a2),
                conversation_id=conv.id,
                turn_index=3,
                query=q2,
                history=msgs[:2],
                old_answer=a2,
                feedback=Feedback.BAD,
            ),
        ]
        items.append((conv, cases[: n_cases - 2 * i], []))
    return items


def mock_stats(base_url: str) -> dict[str, int]:
    """The mock's counters."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as resp:
        return {k: v for k, v in json.load(resp).items() if isinstance(v, int)}


def mock_requests(base_url: str) -> int:
    """How many chat requests the mock has answered."""
    return mock_stats(base_url)["completions"]


async def replay_once(store: Store, base_url: str, concurrency: int, fresh: bool) -> tuple[float, int]:
    """One full run through the same service the CLI uses; returns (seconds, cases)."""
    settings = Settings(
        db=store.url,
        judge="mock:bench-model",
        concurrency=concurrency * 2,
        providers={"mock": ProviderConfig(base_url=base_url, max_concurrency=concurrency, max_retries=0)},
        prices={"mock:bench-model": Price(0.4, 1.6)},
    )
    cases = select_cases(store)
    target = FakeTarget(echo_old_answer=True, name="echo")
    start, cpu = time.perf_counter(), time.process_time()
    await replay(store, settings, target, cases, {}, env={}, fresh=fresh)
    wall = time.perf_counter() - start
    print(f"client CPU {time.process_time() - cpu:.2f} s over {wall:.2f} s wall", file=sys.stderr)
    return wall, len(cases)


async def replay_limited(
    store: Store, base_url: str, rpm: float | None
) -> tuple[float, int, dict[ResultStatus, int]]:
    """One fresh run at default settings (but ``requests_per_minute``); (seconds, cases, results by status)."""
    settings = Settings(
        db=store.url,
        judge="mock:bench-model",
        providers={"mock": ProviderConfig(base_url=base_url, requests_per_minute=rpm)},
        prices={"mock:bench-model": Price(0.4, 1.6)},
    )
    cases = select_cases(store)
    target = FakeTarget(echo_old_answer=True, name="echo")
    start = time.perf_counter()
    run = await replay(store, settings, target, cases, {}, env={}, fresh=True)
    return time.perf_counter() - start, len(cases), store.runs.result_counts(run.id)


def start_mock(latency_ms: float, *extra: str) -> tuple[str, subprocess.Popen[bytes]]:
    """The mock endpoint in its own process, so it does not share the client's interpreter lock."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = Path(__file__).resolve().parent / "mock_openai_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(server), "--port", str(port), "--latency-ms", str(latency_ms), *extra],
        stdout=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            mock_requests(base_url)
            return base_url, proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the mock server did not start")


def open_store(url: str, n_cases: int) -> Store:
    """The store with the synthetic source ingested."""
    store = Store.open(url)
    source = SourceRecord(id="src_bench", path="synthetic", format="canonical", ingested_at=datetime.now(UTC))
    if not store.cases.has_source(source.id):
        store.cases.write_source(source, synthetic_items(n_cases))
    return store


def main_rate_limited(args: argparse.Namespace) -> None:
    """The run against a rate-limited endpoint; prints a Markdown table row."""
    extra = ["--rate-limit", str(args.rate_limit), "--error-rate", str(args.error_rate)]
    if args.no_ratelimit_headers:
        extra.append("--no-ratelimit-headers")
    base_url, mock = start_mock(args.latency_ms, *extra)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.db or str(Path(tmp) / "bench.db"), args.cases)
        try:
            before = mock_stats(base_url)
            seconds, n, counts = asyncio.run(replay_limited(store, base_url, args.rpm))
            after = mock_stats(base_url)
        finally:
            store.close()
            mock.terminate()
            mock.wait(10)
    seen = {k: after[k] - before.get(k, 0) for k in ("completions", "rejected", "server_errors")}
    minimum = (n + 1) // 2 + n  # a judge call per case, a rewrite per follow-up
    floor = minimum / args.rate_limit
    print(
        "| cases | rpm | verdicts | errors | completions | minimum | rejected (429) | rejected/minimum | "
        "500s | wall (s) | floor (s) | wall/floor |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {n} | {args.rpm or '-'} | {counts.get(ResultStatus.DONE, 0)} | {counts.get(ResultStatus.ERROR, 0)} | "
        f"{seen['completions']} | {minimum} | {seen['rejected']} | {seen['rejected'] / minimum:.3f} | "
        f"{seen['server_errors']} | {seconds:.2f} | {floor:.2f} | {seconds / floor:.3f} |"
    )


def main() -> None:
    """Run the benchmark and print a Markdown table row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--db", default=None, help="store URL (default: a temporary SQLite file)")
    parser.add_argument("--rate-limit", type=float, default=None, help="the endpoint's requests a second")
    parser.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered 500")
    parser.add_argument("--rpm", type=float, default=None, help="requests_per_minute of the provider")
    parser.add_argument(
        "--no-ratelimit-headers", action="store_true", help="the endpoint sends no x-ratelimit-*"
    )
    args = parser.parse_args()
    if args.rate_limit is not None:
        main_rate_limited(args)
        return

    base_url, mock = start_mock(args.latency_ms)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.db or str(Path(tmp) / "bench.db"), args.cases)
        try:
            before = mock_requests(base_url)
            seconds, n = asyncio.run(replay_once(store, base_url, args.concurrency, fresh=True))
            calls = mock_requests(base_url) - before
            ideal = calls * (args.latency_ms / 1000) / args.concurrency
            warm_seconds, _ = asyncio.run(replay_once(store, base_url, args.concurrency, fresh=True))
            warm_calls = mock_requests(base_url) - before - calls
        finally:
            store.close()
            mock.terminate()
            mock.wait(10)
    print(
        "| cases | concurrency | latency | model calls | wall (s) | ideal (s) | achieved/ideal | "
        "warm re-run calls | warm wall (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {n} | {args.concurrency} | {args.latency_ms:.0f} ms | {calls} | {seconds:.2f} | {ideal:.2f} | "
        f"{ideal / seconds:.3f} | {warm_calls} | {warm_seconds:.2f} |"
    )


if __name__ == "__main__":
    main()
