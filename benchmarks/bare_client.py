"""The floor a client can reach on this machine: pre-encoded POSTs through ragreplay's own HTTP/1.1 pool.

No prompt is built, no reply is read beyond its JSON, nothing is cached or stored: ``--calls`` copies of one
chat request, ``--concurrency`` at once, against the mock endpoint (``mock_openai_server.py``, its own process)
at ``--latency-ms``. What ``replay_scale.py efficiency`` and ``eval_side_by_side.py`` measure for ragreplay is
this plus the work of a replay or an eval, so the difference between the two is what that work costs:

    python benchmarks/bare_client.py --calls 3000 --concurrency 64     # as replay_scale.py efficiency at c=64
    python benchmarks/bare_client.py --calls 500 --concurrency 16      # as eval_side_by_side.py (open)
    python benchmarks/bare_client.py --calls 3000 --concurrency 64 --latency-ms 0   # CPU per call

Prints one Markdown row per ``--repeat``: wall, ideal (calls x latency / concurrency), achieved/ideal, the
calls' mean latency and the client's CPU per call (``time.process_time``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ragreplay.providers.http11_pool import HttpPool, PostTarget
from replay_throughput import start_mock

BODY = json.dumps(
    {
        "model": "bench",
        "messages": [
            {"role": "system", "content": "Return a JSON verdict about the answer. " * 20},
            {"role": "user", "content": "A question, the old answer and the new answer. " * 20},
        ],
    }
).encode()


async def bare_run(base_url: str, calls: int, concurrency: int) -> tuple[float, float, float]:
    """(wall s, mean latency s, client CPU s) of ``calls`` POSTs, ``concurrency`` at once."""
    pool = HttpPool(timeout_s=60, max_connections=concurrency)
    target = PostTarget(f"{base_url}/chat/completions", {"Content-Type": "application/json"})
    latencies: list[float] = []
    left = iter(range(calls))

    async def worker() -> None:
        for _ in left:
            sent = time.perf_counter()
            reply = await pool.post(target, BODY)
            latencies.append(time.perf_counter() - sent)
            json.loads(reply.body)

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    await pool.aclose()
    return wall, sum(latencies) / len(latencies), used


def main() -> None:
    """Run the bare client ``--repeat`` times against one mock and print a Markdown table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base_url, mock = start_mock(args.latency_ms)
    print(
        "| calls | concurrency | latency | wall (s) | ideal (s) | achieved/ideal | mean call (ms) | CPU per call (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for _ in range(args.repeat):
            wall, mean, used = asyncio.run(bare_run(base_url, args.calls, args.concurrency))
            ideal = args.calls * args.latency_ms / 1000 / args.concurrency
            achieved = f"{ideal / wall:.3f}" if ideal else "-"  # at 0 ms there is no ideal to reach
            print(
                f"| {args.calls} | {args.concurrency} | {args.latency_ms:.0f} ms | {wall:.3f} | {ideal:.3f} | "
                f"{achieved} | {mean * 1000:.2f} | {used / args.calls * 1000:.3f} |"
            )
    finally:
        mock.terminate()
        mock.wait(10)


if __name__ == "__main__":
    main()
