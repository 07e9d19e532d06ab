"""Loopback load test of ``ragreplay shadow serve``: N requests through the proxy (shadow wired) vs straight to
the champion, each from the same client at the same concurrency.

python benchmarks/shadow_proxy_load.py --requests 2000 --concurrency 16 [--rate 1.0] [--db postgresql://...]

Champion, challenger and proxy each run in their own process (uvicorn), so the proxy's event loop competes
only with itself. The champion answers after ``--latency`` ms (default 5). The challenger answers after 20 ms,
answers 500 to every 10th request and hangs 30 s on every 50th, so the shadow meets errors and timeouts
(``--timeout``, default 0.5 s). After the run the proxy is stopped (SIGTERM: the shadow flushes its log) and
the rows in the store are counted. Prints one JSON object; exits 1 on a champion error or when the rows do
not add up (rows == (sampled - dropped) * challengers - rows dropped - rows lost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    """A loopback port free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def champion_app(latency_s: float) -> Any:
    """A RAG app stand-in: answers the question after a fixed delay."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def ask(request: Request) -> JSONResponse:
        body = await request.json()
        await asyncio.sleep(latency_s)
        return JSONResponse({"answer": f"champion: {body['question']}", "contexts": [{"id": "cao#12"}]})

    return Starlette(routes=[Route("/ask", ask, methods=["POST"])])


def challenger_app() -> Any:
    """Answers after 20 ms; every 10th call 500, every 50th hangs 30 s."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    count = 0

    async def ask(request: Request) -> Response:
        nonlocal count
        count += 1
        n = count
        if n % 50 == 0:
            await asyncio.sleep(30)
        await asyncio.sleep(0.02)
        if n % 10 == 0:
            return Response("index offline", status_code=500)
        return JSONResponse({"answer": "challenger", "contexts": [{"id": "cao#12"}]})

    return Starlette(routes=[Route("/ask", ask, methods=["POST"])])


def serve_role(args: argparse.Namespace) -> None:
    """Run one of the three servers in this process."""
    import uvicorn

    if args.role == "champion":
        app = champion_app(args.latency / 1000)
    elif args.role == "challenger":
        app = challenger_app()
    else:
        from ragreplay.cli.shadow_cmd import build_app, build_sampler
        from ragreplay.shadow.mirror import RequestFields
        from ragreplay.store import Store

        fields = RequestFields(contexts_path="contexts")
        app = build_app(
            args.champion,
            {"flaky": args.challenger},
            Store.open(args.db),
            build_sampler(args.rate, [], "UTC", "request"),
            fields,
            challenger_timeout_s=args.timeout,
        )
        app.close_timeout_s = args.timeout + 5
        close = app.on_close

        async def close_and_report() -> None:
            # uvicorn re-raises SIGTERM after shutdown, so report from the lifespan, after the flush
            if close is not None:
                await close()
            stats = app.mirror.shadow.stats().as_dict()
            Path(args.stats_file).write_text(json.dumps({**stats, "mirror": app.mirror.stats()}))

        app.on_close = close_and_report
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
    )


def start(role: str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    """Start a server process running this script in ``role`` and wait until it answers."""
    cmd = [sys.executable, __file__, "--role", role, "--port", str(port), *extra]
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{role} server did not start") from None
            time.sleep(0.05)


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``."""
    return statistics.quantiles(values, n=1000, method="inclusive")[round(q * 1000) - 1]


async def load(url: str, n: int, concurrency: int) -> tuple[list[float], int]:
    """Latencies (ms) of ``n`` POSTs at ``concurrency``, and how many failed or answered wrongly."""
    latencies: list[float] = []
    errors = 0
    queue = iter(range(n))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=30, limits=limits, trust_env=False) as client:

        async def worker() -> None:
            nonlocal errors
            for i in queue:
                start = time.perf_counter()
                try:
                    resp = await client.post(
                        url + "/ask", json={"question": f"q{i}"}, headers={"X-User-Id": f"u{i % 97}"}
                    )
                    ok = resp.status_code == 200 and resp.json()["answer"] == f"champion: q{i}"
                except httpx.HTTPError:
                    ok = False
                latencies.append((time.perf_counter() - start) * 1000)
                errors += not ok

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, errors


def run(args: argparse.Namespace, db: str, stats_file: Path) -> dict[str, Any]:
    """Start the servers, load both paths, stop the proxy, count rows."""
    from ragreplay.store import Store

    ports = {role: free_port() for role in ("champion", "challenger", "proxy")}
    champion_url = f"http://127.0.0.1:{ports['champion']}"
    procs = [
        start("champion", ports["champion"], "--latency", str(args.latency)),
        start("challenger", ports["challenger"]),
    ]
    with Store.open(db) as store:  # creates the schema once, before the proxy
        before = store.count_shadow_rows()
    proxy = start(
        "proxy",
        ports["proxy"],
        *("--champion", champion_url, "--challenger", f"http://127.0.0.1:{ports['challenger']}"),
        *(
            "--db",
            db,
            "--rate",
            str(args.rate),
            "--timeout",
            str(args.timeout),
            "--stats-file",
            str(stats_file),
        ),
    )
    try:
        warm = min(200, args.requests)
        asyncio.run(load(champion_url, warm, args.concurrency))
        asyncio.run(load(f"http://127.0.0.1:{ports['proxy']}", warm, args.concurrency))
        direct, direct_errors = asyncio.run(load(champion_url, args.requests, args.concurrency))
        through, proxy_errors = asyncio.run(
            load(f"http://127.0.0.1:{ports['proxy']}", args.requests, args.concurrency)
        )
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=args.timeout + 30)
    finally:
        for proc in [proxy, *procs]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stats = json.loads(stats_file.read_text())
    with Store.open(db) as store:
        stored = store.count_shadow_rows() - before
    # one challenger: one row per shadowed request
    expected_rows = (stats["sampled"] - stats["dropped"]) - stats["rows_dropped"] - stats["rows_lost"]
    p50_d, p99_d, p50_p, p99_p = pct(direct, 0.5), pct(direct, 0.99), pct(through, 0.5), pct(through, 0.99)
    return {
        "requests": args.requests,
        "warmup_requests_per_path": min(200, args.requests),
        "concurrency": args.concurrency,
        "champion_latency_ms": args.latency,
        "store": db.split(":", 1)[0] if "://" in db else "sqlite",
        "direct_ms": {"p50": round(p50_d, 3), "p99": round(p99_d, 3)},
        "proxy_ms": {"p50": round(p50_p, 3), "p99": round(p99_p, 3)},
        "added_ms": {"p50": round(p50_p - p50_d, 3), "p99": round(p99_p - p99_d, 3)},
        "champion_errors": direct_errors + proxy_errors,
        "stats": stats,
        "rows_expected": expected_rows,
        "rows_in_store": stored,
        "rows_add_up": stored == expected_rows == stats["rows_written"],
    }


def main() -> None:
    """Parse arguments; run a server role or the whole benchmark and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=1.0, help="sampling rate (1.0 = every request)")
    parser.add_argument("--timeout", type=float, default=0.5, help="challenger timeout in seconds")
    parser.add_argument("--latency", type=float, default=5.0, help="champion latency in ms")
    parser.add_argument("--db", default="", help="store URL (default: a temporary SQLite file)")
    parser.add_argument("--role", choices=["champion", "challenger", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--champion", help=argparse.SUPPRESS)
    parser.add_argument("--challenger", help=argparse.SUPPRESS)
    parser.add_argument("--stats-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        serve_role(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'shadow.db'}"
        result = run(args, db, Path(tmp) / "proxy-stats.json")
    print(json.dumps(result, indent=2))
    if result["champion_errors"] or not result["rows_add_up"]:
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("RAGREPLAY_SHADOW_SALT", "bench")
    main()
