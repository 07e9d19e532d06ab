"""CPU time of one proxy hop in-process: ``ShadowProxy`` called as an ASGI app (no uvicorn in front) against a
minimal upstream on loopback that answers every request with the same small JSON reply.

python benchmarks/shadow_proxy_hop.py [--requests 20000] [--concurrency 1 16]

Measures what the proxy's own code and its HTTP client cost per request (no mirror), apart from the server in
front of it, the champion app and the load client, which the load test (shadow_proxy_load.py) adds. Prints one
JSON object: CPU microseconds per request at each concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from collections.abc import MutableMapping
from typing import Any

from ragreplay.shadow.proxy import create_proxy

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


async def measure(requests: int, concurrencies: list[int]) -> dict[str, Any]:
    """CPU microseconds per proxied request at each concurrency, after 500 warm-up requests."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = create_proxy(f"http://127.0.0.1:{port}", mirror=None)
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

    for _ in range(500):
        await batch(1)
    out: dict[str, Any] = {}
    for concurrency in concurrencies:
        rounds = max(1, requests // concurrency)
        started = time.process_time()
        for _ in range(rounds):
            await batch(concurrency)
        out[f"cpu_us_per_request_c{concurrency}"] = round(
            (time.process_time() - started) / (rounds * concurrency) * 1e6, 1
        )
    await proxy.aclose()
    server.close()
    if set(statuses) != {200}:
        raise SystemExit(f"the proxy did not answer 200 to every request: {dict(statuses)}")
    return out


def main() -> None:
    """Parse arguments, run on uvloop when installed, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        factory = None
    else:
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        result = runner.run(measure(args.requests, args.concurrency))
    print(json.dumps({"loop": "uvloop" if factory else "asyncio", **result}))


if __name__ == "__main__":
    main()
