"""Replay throughput against a mock OpenAI-compatible endpoint with a fixed latency, then a warm-cache re-run.

The ideal is endpoint-limited: every model call takes the fixed latency and at most ``--concurrency`` run at
once,
so a run of C calls cannot finish faster than ``C * latency / concurrency``. We report achieved/ideal.

    python benchmarks/replay_throughput.py --cases 2000 --concurrency 32 --latency-ms 100
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
from ragreplay.core.runs import SourceRecord
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


def mock_requests(base_url: str) -> int:
    """How many chat requests the mock has answered."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as resp:
        return int(json.load(resp)["completions"])


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


def start_mock(latency_ms: float) -> tuple[str, subprocess.Popen[bytes]]:
    """The mock endpoint in its own process, so it does not share the client's interpreter lock."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = Path(__file__).resolve().parent / "mock_openai_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(server), "--port", str(port), "--latency-ms", str(latency_ms)],
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


def main() -> None:
    """Run the benchmark and print a Markdown table row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--db", default=None, help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args()

    base_url, mock = start_mock(args.latency_ms)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(args.db or str(Path(tmp) / "bench.db"))
        try:
            source = SourceRecord(
                id="src_bench", path="synthetic", format="canonical", ingested_at=datetime.now(UTC)
            )
            if not store.cases.has_source(source.id):
                store.cases.write_source(source, synthetic_items(args.cases))
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
