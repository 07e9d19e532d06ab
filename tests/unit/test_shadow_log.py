"""The shadow log: bounded queue, batched background writes, failures counted and survived, flush on close."""

from __future__ import annotations

import asyncio

import pytest

from ragreplay.shadow.log import ShadowLog
from shadow_fakes import FakeSink, make_row


async def wait_until(predicate, timeout_s: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.005)):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached")


async def test_rows_are_written_in_batches_in_the_background() -> None:
    sink = FakeSink()
    log = ShadowLog(sink, batch_size=10, flush_interval_s=0.05)
    rows = [make_row(i) for i in range(25)]
    assert all(log.offer(r) for r in rows)
    assert sink.rows == {}  # offer never writes on the caller's path
    await wait_until(lambda: log.written == 25)
    assert set(sink.rows) == {r.id for r in rows}
    assert max(sink.batches) <= 10 and sum(sink.batches) == 25
    await log.aclose()
    stats = log.stats()
    assert (stats.offered, stats.written, stats.dropped, stats.lost, stats.pending) == (25, 25, 0, 0, 0)


async def test_full_queue_drops_and_counts() -> None:
    sink = FakeSink()
    sink.gate.clear()  # the store stalls: nothing leaves the queue while we offer
    log = ShadowLog(sink, batch_size=5, flush_interval_s=0.01, max_queue=20)
    accepted = [log.offer(make_row(i)) for i in range(60)]
    assert accepted.count(False) == log.dropped >= 60 - 20 - 5  # at most one batch left the queue
    sink.gate.set()
    await log.aclose()
    assert log.written == log.offered - log.dropped - log.lost == len(sink.rows)
    assert log.lost == 0


async def test_failing_store_loses_batches_and_recovers() -> None:
    sink = FakeSink()
    sink.failing = True
    log = ShadowLog(sink, batch_size=4, flush_interval_s=0.01)
    for i in range(8):
        log.offer(make_row(i))
    await wait_until(lambda: log.lost == 8)
    assert log.written == 0 and log.last_error == "ConnectionError: store down"
    sink.failing = False
    later = [make_row(100 + i) for i in range(6)]
    for r in later:
        assert log.offer(r)
    await wait_until(lambda: log.written == 6)
    assert set(sink.rows) == {r.id for r in later}
    await log.aclose()
    assert log.written == log.offered - log.dropped - log.lost


async def test_aclose_flushes_what_is_queued() -> None:
    sink = FakeSink()
    log = ShadowLog(sink, batch_size=1000, flush_interval_s=60)  # nothing would flush on its own soon
    for i in range(30):
        log.offer(make_row(i))
    await asyncio.sleep(0.01)
    assert log.written == 0
    await log.aclose(timeout_s=2)
    assert log.written == 30 == len(sink.rows)
    assert not log.offer(make_row(99)) and log.dropped == 1  # closed: refused and counted


async def test_aclose_gives_up_after_timeout_and_counts_unwritten_as_lost() -> None:
    sink = FakeSink()
    sink.gate.clear()
    log = ShadowLog(sink, batch_size=5, flush_interval_s=0.01)
    for i in range(12):
        log.offer(make_row(i))
    await asyncio.sleep(0.05)
    await log.aclose(timeout_s=0.1)
    sink.gate.set()
    assert log.lost == 12 and log.written == 0
    assert log.written == log.offered - log.dropped - log.lost


def test_offer_outside_a_loop_queues_until_close() -> None:
    sink = FakeSink()
    log = ShadowLog(sink)
    assert log.offer(make_row(1))
    assert log.stats().pending == 1
    asyncio.run(log.aclose())
    assert log.written == 1 and len(sink.rows) == 1


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        ShadowLog(FakeSink(), batch_size=0)


class PickySink(FakeSink):
    """A store that refuses any batch holding a row whose query is ``refused`` (as PostgreSQL refuses one
    text it cannot keep), and counts the write attempts."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def write_shadow_rows(self, rows):  # type: ignore[no-untyped-def]
        self.attempts += 1
        if any(r.query == "refused" for r in rows):
            raise ValueError("cannot store this row")
        super().write_shadow_rows(rows)


async def test_a_refused_batch_is_retried_row_by_row_and_only_the_bad_row_is_lost() -> None:
    sink = PickySink()
    log = ShadowLog(sink, batch_size=8, flush_interval_s=0.01)
    rows = [make_row(i) for i in range(8)]
    rows[3] = rows[3].model_copy(update={"query": "refused"})
    for row in rows:
        log.offer(row)
    await log.aclose()
    stats = log.stats()
    assert (stats.written, stats.lost) == (7, 1) and set(sink.rows) == {r.id for r in rows} - {rows[3].id}
    assert "cannot store this row" in (stats.last_error or "")


async def test_a_store_that_is_down_is_not_hammered_row_by_row() -> None:
    sink = PickySink()
    sink.failing = True
    log = ShadowLog(sink, batch_size=8, flush_interval_s=0.01)
    for i in range(8):
        log.offer(make_row(i))
    await log.aclose(timeout_s=0.5)
    assert log.lost == 8 and log.written == 0
    assert sink.attempts == 1  # a connection error loses the batch; no retry of each row against a dead store


async def test_unstorable_text_is_replaced_counted_and_written() -> None:
    sink = FakeSink()
    log = ShadowLog(sink, batch_size=4, flush_interval_s=0.01)
    bad = make_row(0).model_copy(update={"query": "vraag\x00met\ud800", "tags": {"dept\x00": "hr"}})
    log.offer(bad)
    log.offer(make_row(1))
    await log.aclose()
    assert log.written == 2 and log.stats().made_storable == 1
    stored = sink.rows[bad.id]
    assert stored.query == "vraag\ufffdmet\ufffd" and stored.tags == {"dept\ufffd": "hr"}
