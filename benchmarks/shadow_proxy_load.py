"""Loopback load test of ``ragreplay shadow serve``: N requests through the proxy (shadow wired) vs straight to
the champion, each from the same client at the same concurrency.

python benchmarks/shadow_proxy_load.py --requests 2000 --concurrency 16 [--rate 1.0] [--db postgresql://...]

Champion, challenger and proxy each run in their own process (uvicorn with its "auto" stack: uvloop and
httptools when installed, the same for all three), so the proxy's event loop competes only with itself. The
champion answers after ``--latency`` ms (default 5). The challenger answers after 20 ms, answers 500 to every
10th request and hangs 30 s on every 50th, so the shadow meets errors and timeouts (``--timeout``, default
0.5 s). The load client (aiohttp on uvloop when installed; one keep-alive pool of ``--concurrency`` connections
per path) warms up each path with 200 requests, then alternates the two paths in ``--rounds`` rounds, so
background load hits both alike. After the run the proxy is stopped (SIGTERM: the shadow flushes its log) and
the rows in the store are counted. Prints one JSON object (percentiles, requests/s per path, CPU ms per request
of each process during each path's rounds, the server stack); exits 1 on a champion error or when the rows do
not add up (rows == (sampled - dropped) * challengers - rows dropped - rows lost).

``--serve-workers N`` starts the proxy as ``ragreplay shadow serve --workers N`` instead (its CPU summed over
the worker processes; the rows are counted, not checked against counters, which each worker keeps for
itself). ``--forward-only`` runs the proxy with no mirror; ``--profile FILE`` writes a cProfile (thread CPU
clock) of the proxy's event loop.

``--big-mb 15`` adds two paths, ``direct_big`` and ``proxy_big``: the same small requests while another client
sends one question of that many MB (text the redactor has to scan) down the same path at the start of each of
their rounds, so "other users' p99 while a large body passes" is ``proxy_big`` against ``proxy`` (and
``direct_big`` against ``direct`` is what the champion's own parsing of it costs). Such a body is over the
proxy's shadow cap, so it is streamed to the champion and not shadowed; ``--shadow-max-body-kb 20000`` raises the
cap above it, so it is read whole and shadowed, as before the cap.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp


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
        # a short answer even to a huge question, so the shadow reads (and redacts) the question
        answer = f"champion: {body['question'][:200]}"
        return JSONResponse({"answer": answer, "contexts": [{"id": "cao#12"}]})

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
    elif args.forward_only:
        app = forward_only_app(args)
    else:
        from ragreplay.cli.shadow_cmd import build_sampler
        from ragreplay.shadow.payloads import RequestFields
        from ragreplay.shadow.serve_app import build_app
        from ragreplay.store import Store

        fields = RequestFields(contexts_path="contexts")
        app = build_app(
            args.champion,
            {"flaky": args.challenger},
            Store.open(args.db),
            build_sampler(args.rate, [], "UTC", "request"),
            fields,
            challenger_timeout_s=args.timeout,
            shadow_max_body=int(args.shadow_max_body_kb * 1024) if args.shadow_max_body_kb else None,
        )
        app.close_timeout_s = args.timeout + 5
        close = app.on_close

        async def close_and_report() -> None:
            # uvicorn re-raises SIGTERM after shutdown, so report from the lifespan, after the flush
            if close is not None:
                await close()
            dump_profile(args)
            stats = app.mirror.shadow.stats().as_dict()
            proxy = {"not_shadowed_too_large": app.proxy.stats.not_shadowed_too_large}
            Path(args.stats_file).write_text(
                json.dumps({**stats, "mirror": app.mirror.stats(), "proxy": proxy})
            )

        app.on_close = close_and_report
    if args.role == "proxy" and args.profile:
        PROFILER.enable()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
        **({"loop": "asyncio", "http": "h11"} if args.stack == "plain" else {}),  # type: ignore[arg-type]
    )


PROFILER = cProfile.Profile(time.thread_time)  # CPU of this thread, not wall: the machine is shared
"""The proxy role's profile (``--profile``): the event loop's thread only; the log's writer thread is not in it."""


def dump_profile(args: argparse.Namespace) -> None:
    """Write the proxy's profile, when asked for (from the lifespan: uvicorn re-raises SIGTERM after it)."""
    if args.profile:
        PROFILER.disable()
        PROFILER.dump_stats(args.profile)


def forward_only_app(args: argparse.Namespace) -> Any:
    """The proxy with no mirror (what ``shadow serve`` runs without challengers): forwarding alone. Writes
    zero shadow counters to the stats file at shutdown, so the row check holds."""
    from ragreplay.asgi import run_lifespan
    from ragreplay.shadow.proxy import create_proxy

    proxy = create_proxy(args.champion)

    async def close() -> None:
        await proxy.aclose()
        dump_profile(args)
        zero = dict.fromkeys(["sampled", "dropped", "rows_dropped", "rows_lost", "rows_written"], 0)
        Path(args.stats_file).write_text(json.dumps({**zero, "mirror": {}}))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, close)
        else:
            await proxy(scope, receive, send)

    return app


def serve_workers(
    args: argparse.Namespace, port: int, champion_url: str, challenger_url: str, db: str
) -> subprocess.Popen[bytes]:
    """The proxy as deployed with workers: ``ragreplay shadow serve --workers N`` (the same settings as the
    proxy role: one challenger, contexts read, the challenger timeout)."""
    cmd = [
        *(sys.executable, "-c", "from ragreplay.cli.app import main; main()"),
        *("shadow", "serve", "--champion", champion_url),
        *("--challenger", f"flaky={challenger_url}", "--db", db, "--sample", str(args.rate)),
        *("--challenger-timeout", str(args.timeout), "--contexts-path", "contexts", "--port", str(port)),
        *("--workers", str(args.serve_workers)),
    ]
    return start("proxy", port, cmd=cmd)


def start(role: str, port: int, *extra: str, cmd: list[str] | None = None) -> subprocess.Popen[bytes]:
    """Start a server process running this script in ``role`` (or ``cmd``) and wait until it answers."""
    cmd = cmd or [sys.executable, __file__, "--role", role, "--port", str(port), *extra]
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


def client_session(concurrency: int) -> aiohttp.ClientSession:
    """The load client: aiohttp, not httpx, because it shares the two cores with the servers and httpx costs
    several times the CPU per request (at concurrency 16 it alone pushed the *direct* p99 to ~400 ms)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=30),
        trust_env=False,
    )


async def load(
    client: aiohttp.ClientSession, url: str, ids: range, concurrency: int
) -> tuple[list[float], int]:
    """Latencies (ms) of one POST per id in ``ids`` at ``concurrency``, and how many failed or answered
    wrongly."""
    latencies: list[float] = []
    errors = 0
    queue = iter(ids)

    async def worker() -> None:
        nonlocal errors
        for i in queue:
            body = json.dumps({"question": f"q{i}"}).encode()
            headers = {"Content-Type": "application/json", "X-User-Id": f"u{i % 97}"}
            start = time.perf_counter()
            try:
                async with client.post(url + "/ask", data=body, headers=headers) as resp:
                    status, answer = resp.status, await resp.read()
                ok = status == 200 and json.loads(answer)["answer"] == f"champion: q{i}"
            except (aiohttp.ClientError, TimeoutError, ValueError, KeyError):
                ok = False
            latencies.append((time.perf_counter() - start) * 1000)
            errors += not ok

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, errors


def cpu_s(pid: int | None = None) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` (None: this one); None where /proc is
    missing."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds used so far by process ``pid`` and the children it has now, and theirs (uvicorn's worker
    processes under ``ragreplay shadow serve --workers N``)."""
    total = cpu_s(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return total
    for child in children:
        spent = tree_cpu_s(int(child))
        if total is not None and spent is not None:
            total += spent
    return total


def loop_thread_cpu_s(pid: int) -> float | None:
    """CPU seconds used so far by the main thread (the event loop) of process ``pid``; None where /proc is
    missing. The process's total less this is its other threads (the shadow log's writer)."""
    try:
        fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float | None:
    """CPU seconds that processes on this machine spent so far, in user and system mode (all cores; interrupt
    time, where the kernel does much of the loopback networking, is left out); None where /proc is missing."""
    try:
        user, nice, system = (int(v) for v in Path("/proc/stat").read_text().split()[1:4])
    except (OSError, ValueError):
        return None
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


BIG_LINE = "Please check order 4471 of 2024-03-01 for x@example.com, call me on +31 6 1234 5678 today. "


def big_body(mb: float) -> bytes:
    """A JSON question of about ``mb`` MB: sentences with an e-mail address and a phone number in each."""
    return json.dumps({"question": BIG_LINE * int(mb * (1 << 20) / len(BIG_LINE))}).encode()


async def send_big(url: str, body: bytes, statuses: list[int]) -> None:
    """POST ``body`` to ``url``/ask once; its status (0: failed) goes to ``statuses``."""
    async with client_session(1) as client:
        headers = {"Content-Type": "application/json", "X-User-Id": "big"}
        try:
            async with client.post(url + "/ask", data=body, headers=headers) as resp:
                await resp.read()
                statuses.append(resp.status)
        except (aiohttp.ClientError, TimeoutError):
            statuses.append(0)


async def measure(
    direct_url: str,
    proxy_url: str,
    requests: int,
    concurrency: int,
    rounds: int,
    pids: dict[str, int],
    big: bytes = b"",
    serve_workers: int = 0,
) -> dict[str, Any]:
    """Warm up both paths (200 requests each, which also opens the connections), then ``requests`` per path in
    ``rounds`` that alternate direct and proxy, so a burst of background load hits both alike. The two paths
    get identical clients (one pool of ``concurrency`` keep-alive connections each). Also adds up the CPU time
    each process (``pids`` and this client) spent during each path's rounds. With ``big``, also the
    ``direct_big`` and ``proxy_big`` paths: the same while ``big`` is posted down that path once a round."""
    paths = ["direct", "proxy", *(["direct_big", "proxy_big"] if big else [])]
    latencies: dict[str, list[float]] = {path: [] for path in paths}
    errors = dict.fromkeys(paths, 0)
    wall = dict.fromkeys(paths, 0.0)
    big_statuses: dict[str, list[int]] = {path: [] for path in paths}
    cpu: dict[str, dict[str, float | None]] = {
        path: dict.fromkeys([*pids, "proxy_loop", "client", "others"], 0.0) for path in latencies
    }

    def snapshot() -> dict[str, float | None]:
        ours = {**{role: tree_cpu_s(pid) for role, pid in pids.items()}, "client": cpu_s()}
        busy = machine_busy_s()
        known = [v for v in ours.values() if v is not None]
        # whatever else ran on the machine meanwhile (other jobs, and the PostgreSQL server for a PG store)
        others = None if busy is None or len(known) < len(ours) else busy - sum(known)
        # the proxy's event-loop thread: part of "proxy", not summed again
        loop = None if serve_workers else loop_thread_cpu_s(pids["proxy"])
        return {**ours, "proxy_loop": loop, "others": others}

    async with client_session(concurrency) as direct, client_session(concurrency) as through:
        both = {"direct": (direct, direct_url), "proxy": (through, proxy_url)}
        clients = {path: both[path.removesuffix("_big")] for path in paths}
        warm = min(200, requests)
        for client, url in both.values():
            await load(client, url, range(-warm, 0), concurrency)
        start = 0
        for size in _rounds(requests, rounds):
            for path, (client, url) in clients.items():
                sender = (
                    asyncio.create_task(send_big(url, big, big_statuses[path]))
                    if path.endswith("_big")
                    else None
                )
                before, started = snapshot(), time.perf_counter()
                lat, err = await load(client, url, range(start, start + size), concurrency)
                after = snapshot()
                if sender is not None:
                    await sender
                wall[path] += time.perf_counter() - started
                latencies[path] += lat
                errors[path] += err
                for role, spent in cpu[path].items():
                    b, a = before[role], after[role]
                    cpu[path][role] = None if spent is None or a is None or b is None else spent + a - b
            start += size
    return {"latencies": latencies, "errors": errors, "cpu_s": cpu, "wall_s": wall, "big": big_statuses}


def _loop_factory(stack: str = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop for the load client when installed and ``stack`` is "auto", like the servers."""
    if stack == "plain":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def server_stack(stack: str = "auto") -> dict[str, str]:
    """The event loop and HTTP parser of all three servers (and the client's loop): uvicorn's "auto" picks
    uvloop and httptools when installed; "plain" is asyncio and h11."""
    import importlib.util

    if stack == "plain":
        return {"loop": "asyncio", "http": "h11"}

    have = {name: importlib.util.find_spec(name) is not None for name in ("uvloop", "httptools")}
    return {
        "loop": "uvloop" if have["uvloop"] else "asyncio",
        "http": "httptools" if have["httptools"] else "h11",
    }


def _rounds(n: int, rounds: int) -> list[int]:
    """``n`` split into ``rounds`` near-equal positive parts."""
    rounds = max(1, min(rounds, n))
    return [n // rounds + (i < n % rounds) for i in range(rounds)]


def run(args: argparse.Namespace, db: str, stats_file: Path) -> dict[str, Any]:
    """Start the servers, load both paths, stop the proxy, count rows."""
    from ragreplay.store import Store

    ports = {role: free_port() for role in ("champion", "challenger", "proxy")}
    champion_url = f"http://127.0.0.1:{ports['champion']}"
    procs = [
        start("champion", ports["champion"], "--latency", str(args.latency), "--stack", args.stack),
        start("challenger", ports["challenger"], "--stack", args.stack),
    ]
    with Store.open(db) as store:  # creates the schema once, before the proxy
        before = store.shadow_rows.count_shadow_rows()
    proxy = (
        serve_workers(args, ports["proxy"], champion_url, f"http://127.0.0.1:{ports['challenger']}", db)
        if args.serve_workers
        else start(
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
                "--stack",
                args.stack,
                "--stats-file",
                str(stats_file),
            ),
            *(["--forward-only"] if args.forward_only else []),
            *(["--shadow-max-body-kb", str(args.shadow_max_body_kb)] if args.shadow_max_body_kb else []),
            *(["--profile", args.profile] if args.profile else []),
        )
    )
    try:
        pids = {"proxy": proxy.pid, "champion": procs[0].pid, "challenger": procs[1].pid}
        with asyncio.Runner(loop_factory=_loop_factory(args.stack)) as runner:
            measured = runner.run(
                measure(
                    champion_url,
                    f"http://127.0.0.1:{ports['proxy']}",
                    args.requests,
                    args.concurrency,
                    args.rounds,
                    pids,
                    big_body(args.big_mb) if args.big_mb else b"",
                    args.serve_workers,
                )
            )
        direct, through = measured["latencies"]["direct"], measured["latencies"]["proxy"]
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=args.timeout + 30)
    finally:
        for proc in [proxy, *procs]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    with Store.open(db) as store:
        stored = store.shadow_rows.count_shadow_rows() - before
    if args.serve_workers:  # each worker keeps its own counters: only the rows can be counted
        stats: dict[str, Any] = {"rows_written": stored, "workers": args.serve_workers}
        expected_rows = stored
    else:
        stats = json.loads(stats_file.read_text())
        # one challenger: one row per shadowed request
        expected_rows = (stats["sampled"] - stats["dropped"]) - stats["rows_dropped"] - stats["rows_lost"]
    p50_d, p99_d, p50_p, p99_p = pct(direct, 0.5), pct(direct, 0.99), pct(through, 0.5), pct(through, 0.99)
    big: dict[str, Any] = {}
    if args.big_mb:
        lat = measured["latencies"]
        big = {
            "big_mb": args.big_mb,
            "big_bodies_sent": {p: len(v) for p, v in measured["big"].items() if v},
            "big_statuses": {p: sorted(set(v)) for p, v in measured["big"].items() if v},
            "direct_big_ms": {
                "p50": round(pct(lat["direct_big"], 0.5), 3),
                "p99": round(pct(lat["direct_big"], 0.99), 3),
            },
            "proxy_big_ms": {
                "p50": round(pct(lat["proxy_big"], 0.5), 3),
                "p99": round(pct(lat["proxy_big"], 0.99), 3),
            },
            "max_ms": {p: round(max(v), 1) for p, v in lat.items()},
            # what a large body passing through the proxy adds to other users' p99, and the same direct
            "big_adds_p99_ms": {
                "proxy": round(pct(lat["proxy_big"], 0.99) - p99_p, 3),
                "direct": round(pct(lat["direct_big"], 0.99) - p99_d, 3),
            },
        }
    return {
        "requests": args.requests,
        "warmup_requests_per_path": min(200, args.requests),
        "concurrency": args.concurrency,
        "champion_latency_ms": args.latency,
        "store": db.split(":", 1)[0] if "://" in db else "sqlite",
        "direct_ms": {"p50": round(p50_d, 3), "p99": round(p99_d, 3)},
        "proxy_ms": {"p50": round(p50_p, 3), "p99": round(p99_p, 3)},
        "added_ms": {"p50": round(p50_p - p50_d, 3), "p99": round(p99_p - p99_d, 3)},
        "requests_per_s": {
            path: round(args.requests / max(w, 1e-9)) for path, w in measured["wall_s"].items()
        },
        "champion_errors": sum(measured["errors"].values()),
        # CPU time per measured request, per process, during each path's rounds (the proxy's includes the shadow)
        "cpu_ms_per_request": {
            path: {
                role: None if v is None else round(v * 1000 / args.requests, 3) for role, v in spent.items()
            }
            for path, spent in measured["cpu_s"].items()
        },
        "server_stack": server_stack(args.stack),
        "stats": stats,
        "rows_expected": expected_rows,
        "rows_in_store": stored,
        "rows_add_up": stored == expected_rows == stats["rows_written"],
        **big,
    }


def main() -> None:
    """Parse arguments; run a server role or the whole benchmark and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=float, default=1.0, help="sampling rate (1.0 = every request)")
    parser.add_argument("--timeout", type=float, default=0.5, help="challenger timeout in seconds")
    parser.add_argument("--latency", type=float, default=5.0, help="champion latency in ms")
    parser.add_argument(
        "--rounds", type=int, default=4, help="direct and proxy runs alternate in this many rounds"
    )
    parser.add_argument("--db", default="", help="store URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--big-mb", type=float, default=0.0, help="also measure while questions of this many MB pass (0: off)"
    )
    parser.add_argument(
        "--shadow-max-body-kb",
        type=float,
        default=0.0,
        help="the proxy's shadow cap (0: its default, 256); above --big-mb the large body is shadowed, as before",
    )
    parser.add_argument("--role", choices=["champion", "challenger", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--champion", help=argparse.SUPPRESS)
    parser.add_argument("--challenger", help=argparse.SUPPRESS)
    parser.add_argument(
        "--stack",
        choices=["auto", "plain"],
        default="auto",
        help="auto: uvicorn's pick (uvloop + httptools when installed); plain: asyncio + h11, for comparison",
    )
    parser.add_argument("--stats-file", help=argparse.SUPPRESS)
    parser.add_argument(
        "--forward-only", action="store_true", help="the proxy without a mirror: forwarding alone, no shadow"
    )
    parser.add_argument(
        "--serve-workers",
        type=int,
        default=0,
        help="run the proxy as `ragreplay shadow serve --workers N` (rows counted, not checked against counters)",
    )
    parser.add_argument(
        "--profile", default="", help="write a cProfile of the proxy's event-loop thread to this file"
    )
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
