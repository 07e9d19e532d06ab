"""`shadow serve --workers N` (ragreplay.shadow.workers): N uvicorn worker processes, each with its own
shadow and log, on one store; the users get the champion's answers and every worker's rows land."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopback import serve
from ragreplay.errors import ConfigError
from ragreplay.shadow.config import ShadowServeConfig
from ragreplay.shadow.mirror import ShadowServeApp
from ragreplay.shadow.proxy import ShadowProxy
from ragreplay.shadow.workers import CONFIG_ENV, check_workers, create_app, export_config
from ragreplay.store import Store

N = 40


async def champion_route(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"answer": f"champion: {body['question']}"})


async def challenger_route(request: Request) -> Response:
    return JSONResponse({"answer": "challenger"})


def app_of(route: object) -> Starlette:
    return Starlette(routes=[Route("/ask", route, methods=["POST"])])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    champion = serve(app_of(champion_route))
    challenger = serve(app_of(challenger_route))
    yield {"champion": next(champion), "challenger": next(challenger)}
    for gen in (champion, challenger):
        next(gen, None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_pids(parent: int) -> list[int]:
    """The uvicorn workers of ``parent``: its children started by multiprocessing's spawn."""
    listing = Path(f"/proc/{parent}/task/{parent}/children")
    if not listing.exists():
        pytest.skip("this kernel does not list child processes in /proc")
    children = listing.read_text().split()
    return [
        int(pid)
        for pid in children
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()  # not the resource tracker
    ]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts worker processes through /proc")
def test_two_workers_answer_and_both_flush_their_rows(urls: dict[str, str], store_url: str) -> None:
    port = free_port()
    cfg = ShadowServeConfig(
        champion=urls["champion"],
        challengers={"b": urls["challenger"]},
        db=store_url,
        sampling={"base_rate": 1.0},  # type: ignore[arg-type]
        challenger_timeout_s=2,
        port=port,
    )
    code = (
        "import sys; from ragreplay.shadow.workers import run_workers; "
        "from ragreplay.shadow.config import ShadowServeConfig; "
        "run_workers(ShadowServeConfig.model_validate_json(sys.argv[1]), 2)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, cfg.model_dump_json()], stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while len(worker_pids(proc.pid)) < 2 or not _answers(base):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "shadow serve --workers 2 did not start"
            time.sleep(0.1)
        assert len(worker_pids(proc.pid)) == 2

        def ask(i: int) -> httpx.Response:  # a new connection each: the kernel spreads them over the workers
            return httpx.post(base + "/ask", json={"question": f"q{i}"}, trust_env=False, timeout=10)

        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(ask, range(N)))
        assert [r.json()["answer"] for r in replies] == [f"champion: q{i}" for i in range(N)]
        stats = json.loads(httpx.get(base + "/_shadow/stats", trust_env=False).content)
        assert 0 < stats["forwarded"] <= N + 1  # one worker's counters
    finally:
        proc.send_signal(signal.SIGTERM)  # each worker closes its shadow and flushes its log
        proc.wait(timeout=30)
    with Store.open(store_url) as store:
        rows = list(store.shadow_rows.iter_shadow_rows())
    # the readiness probe's question counts too; every row is there once
    asked = {r.query for r in rows}
    assert {f"q{i}" for i in range(N)} <= asked and len(rows) == len({r.id for r in rows}) == len(asked)


def _answers(base: str) -> bool:
    try:
        resp = httpx.post(base + "/ask", json={"question": "ready?"}, trust_env=False, timeout=2)
    except httpx.HTTPError:
        return False
    return resp.status_code == 200


def test_the_factory_builds_the_app_from_the_exported_config(
    urls: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, "")  # restored (unset) after the test, whatever export_config writes
    with pytest.raises(ConfigError, match="--workers"):
        create_app()
    export_config(ShadowServeConfig(champion=urls["champion"]))
    assert isinstance(create_app(), ShadowProxy)  # no challenger: forward only, no store
    cfg = ShadowServeConfig(
        champion=urls["champion"],
        challengers={"b": urls["challenger"]},
        db=f"sqlite:///{tmp_path}/w.db",
        sampling={"base_rate": 0.5, "per": "user"},  # type: ignore[arg-type]
        mirror_paths=["/ask"],
    )
    export_config(cfg)
    assert ShadowServeConfig.model_validate_json(os.environ[CONFIG_ENV]) == cfg
    app = create_app()
    assert isinstance(app, ShadowServeApp)
    assert app.mirror.shadow.sampler.per == "user" and app.mirror.shadow.sampler.base_rate == 0.5
    asyncio.run(app.aclose())


def test_workers_must_be_positive() -> None:
    assert check_workers(3) == 3
    with pytest.raises(ConfigError, match="--workers 0"):
        check_workers(0)
