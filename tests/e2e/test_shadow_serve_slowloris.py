"""Issue 12 as reported: 300 slow connections against `ragreplay shadow serve` limited to 256 open files. They
held every descriptor for ever and real users were refused. Now the proxy raises its soft limit on open files
as far as the hard limit allows (the slow clients then cost nothing to real users), and where the hard limit
itself is 256 it warns at start and closes the slow clients after ``--header-timeout``, so a real user's retry
gets through within seconds."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from ragreplay.asgi import Receive, Scope, Send, read_body, send_body
from ragreplay.asgi.serving import serve_in_thread

FILES = 256
SLOW = 300


async def champion(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "http":
        await read_body(receive)
        await send_body(send, 200, b'{"answer": "25 days"}', b"application/json")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _proxy(hard_limit: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`shadow serve` (forwarding only, 1 s header timeout) started with a soft limit of 256 open files."""

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, hard_limit))

    port = _free_port()
    with serve_in_thread(champion) as champion_url:
        args = ["shadow", "serve", "--champion", champion_url, "--port", str(port), "--header-timeout", "1"]
        process = subprocess.Popen(
            [sys.executable, "-m", "ragreplay.cli.app", *args],
            env={**os.environ, "COLUMNS": "200"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=few_files,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            try:
                httpx.get(url + "/ask", timeout=2, trust_env=False)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.1)
        try:
            yield url, process
        finally:
            process.terminate()
            process.wait(15)


def _slow_clients(url: str) -> list[socket.socket]:
    """300 connections: half send nothing, half a request line and a header, never the end of the headers."""
    port = int(url.rsplit(":", 1)[1])
    slow: list[socket.socket] = []
    for i in range(SLOW):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        if i % 2:
            sock.sendall(b"POST /ask HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)
    return slow


def _user(url: str, within_s: float) -> int:
    """A real user who retries a refused request until ``within_s``; how many attempts it took."""
    deadline = time.monotonic() + within_s
    attempts = 0
    while True:
        attempts += 1
        try:
            answer = httpx.post(url + "/ask", json={"question": "leave?"}, timeout=within_s, trust_env=False)
        except httpx.TransportError:
            answer = None
        if answer is not None and answer.status_code == 200:
            assert answer.json() == {"answer": "25 days"}
            return attempts
        # refused, or let in with no descriptor left to reach the champion (502): try again
        assert time.monotonic() < deadline, f"refused for {within_s} s ({attempts} attempts)"
        time.sleep(0.2)


def _stderr(process: subprocess.Popen[bytes]) -> str:
    process.terminate()
    _, err = process.communicate(timeout=15)
    return " ".join(err.decode().split())


def test_a_low_soft_limit_is_raised_so_slow_clients_cost_real_users_nothing() -> None:
    with _proxy(hard_limit=4096) as (url, process):
        slow = _slow_clients(url)
        assert _user(url, within_s=20) == 1
        for sock in slow:
            sock.close()
        assert "warning" not in _stderr(process)


def test_with_a_hard_limit_of_256_slow_clients_are_closed_and_real_users_get_through() -> None:
    with _proxy(hard_limit=FILES) as (url, process):
        slow = _slow_clients(url)
        # Until the first slow clients are closed (1 s) the kernel has no descriptor for the user.
        _user(url, within_s=20)
        for sock in slow:
            sock.close()
        text = _stderr(process)
    assert f"this process may open only {FILES} files" in text and "ulimit -n" in text
