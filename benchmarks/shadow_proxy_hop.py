"""CPU time of one proxy hop in-process: ``ShadowProxy`` called as an ASGI app (no uvicorn in front) against a
minimal upstream on loopback that answers every request with the same small JSON reply.

python benchmarks/shadow_proxy_hop.py [--requests 20000] [--concurrency 1 16]
python benchmarks/shadow_proxy_hop.py --shadow [--rate 1.0]   # the whole shadow serve app, split

Measures what the proxy's own code and its HTTP client cost per request (no mirror), apart from the server in
front of it, the champion app and the load client, which the load test (shadow_proxy_load.py) adds. Prints one
JSON object: CPU microseconds per request at each concurrency.

``--shadow`` runs the shadow serve app instead (``build_app``: proxy, mirror, sampler, one challenger on a
second loopback upstream, the log on a temporary SQLite store) and waits for each batch's challenger calls, so
their CPU is counted, and splits the CPU per request: ``forward`` (the hop alone, measured in a run with no
mirror), ``mirror`` (the mirror callback: sampling, parsing, ``Shadow.record``, timed around each call),
``challenger`` (the rest of the event loop's thread: the challenger calls, redaction, rows) and ``log`` (the
process's other threads: the log's writer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import MutableMapping
from typing import Any

from ragreplay.shadow.proxy import ChampionReply, MirroredRequest, create_proxy

BODY = b'{"answer": "champion: q1", "contexts": [{"id": "cao#12"}]}'
REPLY = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)
HEADERS = [
    (b"host", b"127.0.0.1:8787"),
    (b"content-type", b"application/json"),
    (b"x-user-id", b"u1"),
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"user-agent", b"Python/3.11 aiohttp/3"),
    (b"content-length", b"18"),
]


class Upstream(asyncio.Protocol):
    """Answers each request with ``REPLY``; the requests are small, so one read is one request."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport to answer on."""
        self.transport: Any = transport  # uvloop's transports do not subclass asyncio.Transport

    def data_received(self, data: bytes) -> None:
        """One request in, one reply out."""
        self.transport.write(REPLY)


class TimedMirror:
    """Wraps the mirror callback and adds up the event loop thread's CPU spent in it."""

    def __init__(self, mirror: Any) -> None:
        self.mirror = mirror
        self.cpu_s = 0.0

    def __call__(self, request: MirroredRequest, reply: ChampionReply) -> None:
        """Call the mirror, timed."""
        started = time.thread_time()
        try:
            self.mirror(request, reply)
        finally:
            self.cpu_s += time.thread_time() - started


def shadow_app(champion_url: str, challenger_url: str, rate: float, db: str) -> Any:
    """The shadow serve app as ``ragreplay shadow serve`` builds it, with a timed mirror."""
    from ragreplay.cli.shadow_cmd import build_sampler
    from ragreplay.shadow.payloads import RequestFields
    from ragreplay.shadow.serve_app import build_app
    from ragreplay.store import Store

    sampler = build_sampler(rate, [], "UTC", "request")
    app = build_app(
        champion_url, {"c": challenger_url}, Store.open(db), sampler, RequestFields(contexts_path="contexts")
    )
    app.proxy.mirror = TimedMirror(app.proxy.mirror)
    return app


async def measure(
    requests: int, concurrencies: list[int], rate: float | None = None, db: str = ""
) -> dict[str, Any]:
    """CPU microseconds per proxied request at each concurrency, after 500 warm-up requests; with ``rate``,
    through the shadow serve app sampling at that rate."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    app: Any = None
    if rate is None:
        proxy: Any = create_proxy(f"http://127.0.0.1:{port}", mirror=None)
    else:
        challenger = await loop.create_server(Upstream, "127.0.0.1", 0)
        challenger_url = f"http://127.0.0.1:{challenger.sockets[0].getsockname()[1]}"
        app = proxy = shadow_app(f"http://127.0.0.1:{port}", challenger_url, rate, db)

    async def settle() -> None:
        """Wait for the challenger calls in flight (the shadow keeps them in ``_tasks``)."""
        if app is not None:
            await asyncio.gather(*list(app.mirror.shadow._tasks))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/ask",
        "raw_path": b"/ask",
        "query_string": b"",
        "headers": HEADERS,
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"question": "q1"}', "more_body": False}

    statuses: Counter[int] = Counter()

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] += 1

    async def batch(n: int) -> None:
        await asyncio.gather(*(proxy(scope, receive, send) for _ in range(n)))
        await settle()

    for _ in range(500):
        await batch(1)
    out: dict[str, Any] = {}
    for concurrency in concurrencies:
        rounds = max(1, requests // concurrency)
        n = rounds * concurrency
        mirror_before = proxy.proxy.mirror.cpu_s if app is not None else 0.0
        started, loop_started = time.process_time(), time.thread_time()
        for _ in range(rounds):
            await batch(concurrency)
        if app is not None:  # the log's writer thread catches up, then is counted too
            while app.mirror.shadow.log.stats().pending:
                await asyncio.sleep(0.01)
        spent, loop_spent = time.process_time() - started, time.thread_time() - loop_started
        out[f"cpu_us_per_request_c{concurrency}"] = round(spent / n * 1e6, 1)
        if app is not None:
            mirror = proxy.proxy.mirror.cpu_s - mirror_before
            out[f"split_us_c{concurrency}"] = {
                "loop": round(loop_spent / n * 1e6, 1),
                "mirror": round(mirror / n * 1e6, 1),
                "loop_less_mirror": round((loop_spent - mirror) / n * 1e6, 1),
                "other_threads": round((spent - loop_spent) / n * 1e6, 1),
            }
    await (app.aclose() if app is not None else proxy.aclose())
    if app is not None:
        out["shadow"] = app.mirror.shadow.stats().as_dict()
    server.close()
    if set(statuses) != {200}:
        raise SystemExit(f"the proxy did not answer 200 to every request: {dict(statuses)}")
    return out


def main() -> None:
    """Parse arguments, run on uvloop when installed, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--shadow", action="store_true", help="the whole shadow serve app, not the bare hop")
    parser.add_argument("--rate", type=float, default=1.0, help="with --shadow: the sampling rate")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        factory = None
    else:
        factory = uvloop.new_event_loop
    with tempfile.TemporaryDirectory() as tmp, asyncio.Runner(loop_factory=factory) as runner:
        rate = args.rate if args.shadow else None
        result = runner.run(measure(args.requests, args.concurrency, rate, f"sqlite:///{tmp}/shadow.db"))
    print(json.dumps({"loop": "uvloop" if factory else "asyncio", **result}))


if __name__ == "__main__":
    os.environ.setdefault("RAGREPLAY_SHADOW_SALT", "bench")
    main()
