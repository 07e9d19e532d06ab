"""Large sampled exchanges are read and redacted off the event loop, so other users' requests never wait for
them (issue 12: one 55 MB question stalled every other request for seconds)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from ragreplay.shadow import Shadow, ShadowLog
from ragreplay.shadow.mirror import ProxyMirror
from ragreplay.shadow.offload import Offload
from ragreplay.shadow.payloads import RequestFields
from ragreplay.shadow.proxy import ChampionReply, MirroredRequest
from shadow_fakes import FakeSink, FakeTarget

PHONE = "+31 6 1234 5678"
# about 2.6 MB of text the default redactor has to scan: a few hundred ms of regex work on the loop before
LINE = f"My order 4471 of 2024-03-01 went to x@example.com, call me on {PHONE} or at home please. "
BIG = LINE * 30_000


class LagMeter:
    """A ticker on the event loop: the longest it waited past its 1 ms sleep, i.e. the loop's worst stall."""

    def __init__(self) -> None:
        self.worst_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst_s = max(self.worst_s, time.perf_counter() - started - 0.001)

    async def __aenter__(self) -> LagMeter:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0.01)
        self.worst_s = 0.0
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def until(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


@pytest.fixture(scope="module")
def offload() -> Iterator[Offload]:
    """One worker process for the module's tests (it takes a second or two to start)."""
    shared = Offload()
    yield shared
    shared.close()


def shadow_on(sink: FakeSink, offload: Offload, **options: object) -> Shadow:
    target = FakeTarget("c", text="short answer")
    log = ShadowLog(sink, flush_interval_s=0.01)
    return Shadow(target, {"c": target}, log=log, salt="s", offload=offload, **options)


def exchange(question: str, user_path: bool = False) -> tuple[MirroredRequest, ChampionReply]:
    payload: dict[str, object] = {"question": question, "user": {"id": "u1"}}
    headers = () if user_path else (("x-user-id", "u1"),)
    request = MirroredRequest("POST", "/ask", "", headers, json.dumps(payload).encode(), datetime.now(UTC))
    return request, ChampionReply(200, (), b'{"answer": "yes"}', 3.0)


async def test_a_large_sampled_question_is_read_and_redacted_without_stalling_the_loop(
    offload: Offload,
) -> None:
    sink = FakeSink()
    shadow = shadow_on(sink, offload)
    mirror = ProxyMirror(shadow, RequestFields())
    async with LagMeter() as lag:
        started = time.perf_counter()
        mirror(*exchange(BIG))
        await until(lambda: len(sink.rows) == 1)
        work_s = time.perf_counter() - started
    (row,) = sink.rows.values()
    assert PHONE not in row.query and "[PHONE]" in row.query and "[EMAIL]" in row.query
    assert len(row.query) > 2_000_000
    # On the loop the loop stalled for (nearly) all of the work; off it, for a sliver of it.
    assert lag.worst_s < work_s / 4, (lag.worst_s, work_s)
    assert mirror.stats()["deferred"] == 1 and mirror.recorded == 1
    assert (shadow.stats().sampled, shadow.stats().rows_written) == (1, 1)
    await shadow.aclose()


async def test_the_library_redacts_a_large_query_and_answer_off_the_loop(offload: Offload) -> None:
    sink = FakeSink()
    shadow = shadow_on(sink, offload)
    from ragreplay.core.types import Answer

    async with LagMeter() as lag:
        started = time.perf_counter()
        shadow.record(BIG, Answer(text=BIG), user_id="u1")
        await until(lambda: len(sink.rows) == 1)
        work_s = time.perf_counter() - started
    (row,) = sink.rows.values()
    assert PHONE not in row.query and PHONE not in row.champion_answer.text
    assert "[PHONE]" in row.champion_answer.text
    assert lag.worst_s < work_s / 4, (lag.worst_s, work_s)
    await shadow.aclose()


async def test_large_exchanges_beyond_max_pending_are_left_out_and_counted(
    offload: Offload, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = FakeSink()
    monkeypatch.setattr(offload, "max_pending", 1)
    shadow = shadow_on(sink, offload)
    mirror = ProxyMirror(shadow, RequestFields())
    mirror(*exchange(BIG[:200_000]))
    mirror(*exchange(BIG[:200_000]))  # the first is still being read
    await until(lambda: len(sink.rows) >= 1)
    stats = mirror.stats()
    assert (stats["deferred"], stats["too_busy"], stats["recorded"]) == (1, 1, 1)
    # the one left out never reached the sampler: the counts add up
    assert (shadow.stats().seen, shadow.stats().sampled, shadow.stats().rows_written) == (1, 1, 1)
    await shadow.aclose()


async def test_a_user_id_in_a_large_body_is_read_off_the_loop_before_sampling(offload: Offload) -> None:
    sink = FakeSink()
    shadow = shadow_on(sink, offload)
    mirror = ProxyMirror(shadow, RequestFields(user_header=None, user_path="user.id"))
    mirror(*exchange(BIG[:100_000], user_path=True))
    assert shadow.stats().seen == 0  # not asked yet: the body is read first, off the loop
    await until(lambda: len(sink.rows) == 1)
    (row,) = sink.rows.values()
    assert row.user_hash is not None and row.user_hash != "u1"
    assert (shadow.stats().seen, shadow.stats().sampled) == (1, 1)
    await shadow.aclose()


async def test_a_redactor_that_cannot_go_to_the_worker_process_still_redacts(offload: Offload) -> None:
    secret = "hunter2"
    sink = FakeSink()
    shadow = shadow_on(sink, offload, redact=lambda text: text.replace(secret, "[SECRET]"))
    mirror = ProxyMirror(shadow, RequestFields())
    mirror(*exchange(f"my password is {secret}. " * 5_000))
    await until(lambda: len(sink.rows) == 1)
    (row,) = sink.rows.values()
    assert secret not in row.query and row.query.count("[SECRET]") == 5_000
    await shadow.aclose()


async def test_a_large_body_that_is_not_json_is_counted_unparsed(offload: Offload) -> None:
    sink = FakeSink()
    shadow = shadow_on(sink, offload)
    mirror = ProxyMirror(shadow, RequestFields())
    request = MirroredRequest("POST", "/ask", "", (), b"x" * 100_000, datetime.now(UTC))
    mirror(request, ChampionReply(200, (), b'{"answer": "yes"}', 3.0))
    await until(lambda: mirror.unparsed == 1)
    assert (shadow.stats().seen, shadow.stats().sampled, mirror.recorded) == (1, 0, 0)
    await shadow.aclose()


def test_the_worker_process_exits_when_its_parent_is_killed() -> None:
    import os
    import signal
    import subprocess
    import sys

    script = (
        "import asyncio, os, time\n"
        "from ragreplay.shadow.offload import Offload\n"
        "print(asyncio.run(Offload().run(os.getpid)), flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while True:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the worker outlived its parent"
        time.sleep(0.1)


async def test_a_shadow_closed_while_a_long_text_is_redacted_stores_neither_it_nor_the_raw_text(
    offload: Offload,
) -> None:
    from ragreplay.core.types import Answer
    from ragreplay.shadow.library import NOT_REDACTED

    sink = FakeSink()
    shadow = shadow_on(sink, offload)
    shadow.record(BIG, Answer(text="short answer"), user_id="u1")
    await asyncio.sleep(0.05)  # the challenger has answered; the query is with the worker
    await shadow.aclose(timeout_s=0.01)
    (row,) = sink.rows.values()
    assert row.query == NOT_REDACTED and row.challenger_answer.error == "cancelled: the shadow was closed"
    assert row.champion_answer.text == "short answer"


async def test_the_worker_passes_errors_back_and_a_dead_worker_is_replaced(offload: Offload) -> None:
    import os

    with pytest.raises(ValueError, match="invalid literal"):
        await offload.run(int, "not a number")
    first = await offload.run(os.getpid)
    assert first != os.getpid()
    os.kill(first, 9)
    await asyncio.sleep(0.2)
    second = await offload.run(os.getpid)  # a fresh worker
    assert second not in (first, os.getpid())
