"""The servers hold under abuse (issue 12): slow clients are closed at the header, body and idle deadlines, and
over the connection limit a request gets a 503, all over real sockets (the proxy served by uvicorn on
127.0.0.1 in front of a real champion)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from ragreplay.asgi import Receive, Scope, Send, read_body, send_body
from ragreplay.asgi.guard import WholeBodies
from ragreplay.asgi.limits import ServerLimits
from ragreplay.asgi.serving import serve_in_thread
from ragreplay.shadow.proxy import ShadowProxy, create_proxy

# Deadlines short enough for a quick test, margins generous enough for a loaded 2-core machine.
HEADERS_S = 1.0
BODY_S = 1.0
IDLE_S = 0.5
MARGIN_S = 8.0
IDLE_MARGIN_S = 2.5  # tighter: uvicorn's own default (5 s) must not pass for the setting


class Champion:
    """A tiny champion app that counts the requests that reach it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        self.bodies.append(body)
        await send_body(send, 200, b'{"answer": "25 days"}', b"application/json")


@pytest.fixture
def champion() -> Iterator[tuple[Champion, str]]:
    app = Champion()
    with serve_in_thread(app) as url:
        yield app, url


@contextmanager
def _proxy(champion_url: str, limits: ServerLimits) -> Iterator[tuple[ShadowProxy, str]]:
    """The proxy (forwarding only) in front of the champion, served as ``shadow serve`` serves it."""
    proxy = create_proxy(champion_url, mirror=None, timeout_s=10)
    with serve_in_thread(WholeBodies(proxy), limits=limits) as url:
        yield proxy, url


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _connect(port: int) -> socket.socket:
    """A client socket whose reads fail the test if the server never closes it."""
    return socket.create_connection(("127.0.0.1", port), timeout=HEADERS_S + MARGIN_S)


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a socket timeout fails the test)."""
    out = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk


def _closed_within(sock: socket.socket) -> tuple[bytes, float]:
    started = time.monotonic()
    data = _read_until_closed(sock)
    return data, time.monotonic() - started


LIMITS = ServerLimits(header_timeout_s=HEADERS_S, body_timeout_s=BODY_S, idle_timeout_s=IDLE_S)


def test_slow_clients_are_closed_at_the_header_deadline_while_real_users_are_served(
    champion: tuple[Champion, str],
) -> None:
    app, champion_url = champion
    with _proxy(champion_url, LIMITS) as (_, url):
        port = _port(url)
        opened = time.monotonic()
        silent = [_connect(port) for _ in range(20)]  # connect and send nothing
        partial = [_connect(port) for _ in range(20)]  # half a request line
        for sock in partial:
            sock.sendall(b"POST /ask HT")
        headers = [_connect(port) for _ in range(20)]  # the line and some headers, never the blank line
        for sock in headers:
            sock.sendall(b"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")

        # A client that keeps trickling its headers a byte at a time is closed at the same deadline.
        trickler = _connect(port)
        stop = threading.Event()

        def trickle() -> None:
            for byte in b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 1000:
                if stop.wait(0.1):
                    return
                try:
                    trickler.send(bytes([byte]))
                except OSError:
                    return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()

        # While they are all open, a real user gets the champion's answer at once.
        answer = httpx.post(url + "/ask", json={"question": "leave?"}, timeout=5, trust_env=False)
        assert answer.status_code == 200 and answer.json() == {"answer": "25 days"}
        assert time.monotonic() - opened < HEADERS_S, "the real user had to wait for the slow clients"

        for sock in silent:
            data, _ = _closed_within(sock)
            assert data == b""  # it sent nothing: closed without an answer
        for sock in [*partial, *headers]:
            data, _ = _closed_within(sock)
            assert data.startswith(b"HTTP/1.1 408 ")
            assert b"request headers did not arrive within 1 s" in data
        closed_after = time.monotonic() - opened
        assert HEADERS_S * 0.8 <= closed_after < HEADERS_S + MARGIN_S
        data, _ = _closed_within(trickler)
        stop.set()
        assert data.startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - opened < HEADERS_S + MARGIN_S
        assert len(app.bodies) == 1  # only the real user's request reached the champion
        for sock in [*silent, *partial, *headers, trickler]:
            sock.close()

        # The server is still there for the next user.
        again = httpx.get(url + "/ask", timeout=5, trust_env=False)
        assert again.status_code == 200


def test_a_trickled_body_gets_a_408_and_never_reaches_the_champion(champion: tuple[Champion, str]) -> None:
    app, champion_url = champion
    with _proxy(champion_url, LIMITS) as (proxy, url):
        sock = _connect(_port(url))
        sock.sendall(b"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        sock.sendall(b"Content-Length: 400\r\n\r\n" + b'{"question": "')
        started = time.monotonic()
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(0.2):
                try:
                    sock.send(b"a")
                except OSError:
                    return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        data = _read_until_closed(sock)
        stop.set()
        took = time.monotonic() - started
        sock.close()
        assert data.startswith(b"HTTP/1.1 408 "), data
        assert b"request body did not arrive within 1 s" in data
        assert BODY_S * 0.8 <= took < BODY_S + MARGIN_S
        time.sleep(0.3)  # had the proxy gone on with the part that came, the champion would have it by now
        assert app.bodies == []
        assert proxy.stats.forwarded == 0

        # A body that arrives in time goes through as before.
        answer = httpx.post(url + "/ask", content=b'{"question": "ok"}', timeout=5, trust_env=False)
        assert answer.status_code == 200 and app.bodies == [b'{"question": "ok"}']


def test_a_client_gone_mid_body_is_not_forwarded(champion: tuple[Champion, str]) -> None:
    app, champion_url = champion
    with _proxy(champion_url, LIMITS) as (proxy, url):
        sock = _connect(_port(url))
        sock.sendall(b"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n" + b'{"question": "')
        time.sleep(0.2)
        sock.close()
        time.sleep(0.5)
        assert app.bodies == [] and proxy.stats.forwarded == 0


def test_an_idle_kept_alive_connection_is_closed(champion: tuple[Champion, str]) -> None:
    _, champion_url = champion
    with _proxy(champion_url, LIMITS) as (_, url):
        sock = _connect(_port(url))
        sock.sendall(b"GET /ask HTTP/1.1\r\nHost: x\r\n\r\n")
        first = sock.recv(4096)
        assert first.startswith(b"HTTP/1.1 200 ")
        data, took = _closed_within(sock)
        assert data == b""
        assert IDLE_S * 0.8 <= took < IDLE_S + IDLE_MARGIN_S
        sock.close()


def test_over_the_connection_limit_a_request_gets_a_503(champion: tuple[Champion, str]) -> None:
    _, champion_url = champion
    limits = ServerLimits(header_timeout_s=60, max_connections=5)
    with _proxy(champion_url, limits) as (_, url):
        port = _port(url)
        held = [_connect(port) for _ in range(4)]
        time.sleep(0.2)  # let the server accept them
        # the fifth connection is within the limit
        assert httpx.get(url + "/ask", timeout=5, trust_env=False).status_code == 200
        held.append(_connect(port))
        time.sleep(0.2)
        refused = httpx.get(url + "/ask", timeout=5, trust_env=False)
        assert refused.status_code == 503
        assert refused.headers["connection"] == "close"
        for sock in held:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(url + "/ask", timeout=5, trust_env=False).status_code == 200
