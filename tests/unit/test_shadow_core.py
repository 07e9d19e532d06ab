"""The Shadow: the champion's answer comes back unchanged and at once; challengers are recorded, never raised."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest

from ragreplay.core.shadow import ShadowRow
from ragreplay.core.types import Answer
from ragreplay.errors import ConfigError
from ragreplay.shadow import Shadow, ShadowLog, hash_user_id
from shadow_fakes import FakeSink, FakeTarget


def make_shadow(champion: FakeTarget, *challengers: FakeTarget, **kwargs: object) -> tuple[Shadow, FakeSink]:
    sink = FakeSink()
    log = ShadowLog(sink, batch_size=50, flush_interval_s=0.01)
    shadow = Shadow(champion, {c.name: c for c in challengers}, log=log, **kwargs)
    return shadow, sink


def rows_by_challenger(sink: FakeSink) -> dict[str, ShadowRow]:
    return {r.challenger: r for r in sink.rows.values()}


async def test_champion_answer_returns_unchanged_while_a_challenger_hangs() -> None:
    champion, hung = FakeTarget("champ", text="Ja, artikel 12."), FakeTarget("slow", mode="hang")
    direct = await champion.answer("q", None)
    shadow, sink = make_shadow(champion, hung, challenger_timeout_s=0.3)
    start = time.perf_counter()
    answer = await shadow.handle("Mag een uitzendkracht meedoen?", user_id="u7")
    took = time.perf_counter() - start
    assert answer == direct
    assert took < 0.05 and len(hung.calls) == 0  # returned before the challenger even started
    await asyncio.sleep(0.01)
    assert len(hung.calls) == 1 and hung.finished == 0  # it runs now, in the background
    assert shadow.stats().in_flight == 1
    await shadow.aclose()
    row = rows_by_challenger(sink)["slow"]
    assert row.challenger_answer.error == "timeout after 0.3 s" and row.challenger_answer.latency_ms >= 300
    assert row.champion_answer.text == "Ja, artikel 12." and row.champion_answer.chunk_ids == ["champ#1"]
    assert shadow.stats().challenger_timeouts == 1


async def test_failing_challengers_become_rows_with_errors_and_nothing_is_raised() -> None:
    champion = FakeTarget("champ")
    challengers = [
        FakeTarget("ok"),
        FakeTarget("raises", mode="raise"),
        FakeTarget("errors", mode="error"),
        FakeTarget("hangs", mode="hang"),
        FakeTarget("stubborn", mode="stubborn"),
    ]
    shadow, sink = make_shadow(champion, *challengers, challenger_timeout_s=0.1)
    answer = await shadow.handle("q", tags={"department": "hr"})
    assert answer.text == "champ says hi"
    await shadow.aclose()
    rows = rows_by_challenger(sink)
    assert set(rows) == {"ok", "raises", "errors", "hangs", "stubborn"}
    assert rows["ok"].challenger_answer.error is None and rows["ok"].challenger_answer.text == "ok says hi"
    assert (
        rows["ok"].challenger_answer.chunk_ids == ["ok#1"] and rows["ok"].challenger_answer.cost_usd == 0.002
    )
    assert rows["raises"].challenger_answer.error == "RuntimeError: index offline"
    assert rows["errors"].challenger_answer.error == "rate limited"
    assert (
        rows["hangs"].challenger_answer.error
        == rows["stubborn"].challenger_answer.error
        == "timeout after 0.1 s"
    )
    assert len({r.request_id for r in rows.values()}) == 1 and len({r.id for r in rows.values()}) == 5
    assert all(r.tags == {"department": "hr"} for r in rows.values())
    stats = shadow.stats()
    assert (stats.challenger_errors, stats.challenger_timeouts) == (2, 2)
    assert stats.rows_written == 5


async def test_champion_exception_propagates_exactly_and_nothing_is_shadowed() -> None:
    champion, challenger = FakeTarget("champ", mode="champion_raise"), FakeTarget("b")
    shadow, sink = make_shadow(champion, challenger)
    with pytest.raises(KeyError, match="champion broke"):
        await shadow.handle("q")
    await shadow.aclose()
    assert challenger.calls == [] and sink.rows == {}


async def test_redaction_and_hashing_are_applied_before_storage() -> None:
    champion, challenger = FakeTarget("champ"), FakeTarget("b")
    shadow, sink = make_shadow(champion, challenger, salt="pepper")
    query = "Mail lisa@acme.nl of bel +31 6 1234 5678 over IBAN NL91 ABNA 0417 1643 00"
    await shadow.handle(query, user_id="u7")
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert row.query == "Mail [EMAIL] of bel [PHONE] over IBAN [IBAN]"
    assert row.user_hash == hash_user_id("u7", "pepper")
    assert challenger.calls[0][0] == query  # the challenger itself answers the real question
    assert "lisa@acme.nl" not in row.model_dump_json() and "u7" not in row.model_dump_json()


async def test_answers_and_error_messages_are_redacted_too() -> None:
    champion = FakeTarget("champ", text="Ik heb lisa@acme.nl gemaild")
    echo = FakeTarget("echo", text="Bel +31 6 1234 5678")
    shadow, sink = make_shadow(champion, echo, FakeTarget("raises", mode="raise"))
    answer = await shadow.handle("q")
    assert answer.text == "Ik heb lisa@acme.nl gemaild"  # the user still gets the real answer
    shadow.record("q", Answer(text="x", error="HTTP 500: no user lisa@acme.nl"))
    await shadow.aclose()
    dumped = " ".join(r.model_dump_json() for r in sink.rows.values())
    assert "lisa@acme.nl" not in dumped and "1234 5678" not in dumped
    texts = {r.champion_answer.text for r in sink.rows.values()} | {
        r.challenger_answer.text for r in sink.rows.values()
    }
    assert "Ik heb [EMAIL] gemaild" in texts and "Bel [PHONE]" in texts
    assert any(r.champion_answer.error == "HTTP 500: no user [EMAIL]" for r in sink.rows.values())


async def test_privacy_switches_and_a_broken_redactor() -> None:
    def broken(text: str) -> str:
        raise ValueError("boom")

    shadow, sink = make_shadow(FakeTarget("c"), FakeTarget("b"), redact=None, hash_user_ids=False)
    await shadow.handle("a@b.nl", user_id="u7")
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert (row.query, row.user_hash) == ("a@b.nl", "u7")
    shadow, sink = make_shadow(FakeTarget("c"), FakeTarget("b"), redact=broken)
    await shadow.handle("a@b.nl")
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert row.query == "[redaction failed]" and row.user_hash is None


async def test_record_shadows_an_answer_the_caller_already_has() -> None:
    challenger = FakeTarget("b")
    shadow, sink = make_shadow(FakeTarget("champ"), challenger)
    shadow.record("q", Answer(text="given", latency_ms=42.0), user_id="u1", tags={"t": "x"})
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert row.champion_answer.text == "given" and row.champion_answer.latency_ms == 42.0
    assert challenger.calls[0][1].user_id == "u1" and challenger.calls[0][1].tags == {"t": "x"}


class EveryOther:
    def __init__(self) -> None:
        self.n = 0

    def decide(self, user_id: str | None, now: datetime | None = None) -> bool:
        self.n += 1
        return self.n % 2 == 0


async def test_sampler_and_in_flight_bound_drop_and_count() -> None:
    challenger = FakeTarget("b", delay_s=0.05)
    shadow, sink = make_shadow(FakeTarget("champ"), challenger, sampler=EveryOther(), max_in_flight=3)
    for _ in range(10):
        await shadow.handle("q")
    stats = shadow.stats()
    assert (stats.seen, stats.sampled) == (10, 5)
    assert stats.dropped == 2 and stats.in_flight == 3  # the 4th and 5th sampled found 3 in flight
    await shadow.aclose()
    stats = shadow.stats()
    assert stats.rows_written == len(sink.rows) == stats.sampled - stats.dropped == 3


async def test_full_log_queue_counts_rows_dropped() -> None:
    sink = FakeSink()
    sink.gate.clear()
    log = ShadowLog(sink, batch_size=2, flush_interval_s=0.01, max_queue=4)
    shadow = Shadow(FakeTarget("champ"), {"b": FakeTarget("b")}, log=log)
    for _ in range(20):
        await shadow.handle("q")
    await asyncio.sleep(0.02)
    sink.gate.set()
    await shadow.aclose()
    stats = shadow.stats()
    assert stats.rows_dropped > 0
    assert stats.rows_written == stats.rows_offered - stats.rows_dropped - stats.rows_lost == len(sink.rows)
    assert stats.rows_offered == 20


async def test_store_failure_loses_rows_but_not_the_champion_and_recovers() -> None:
    shadow, sink = make_shadow(FakeTarget("champ"), FakeTarget("b"))
    sink.failing = True
    for _ in range(5):
        assert (await shadow.handle("q")).text == "champ says hi"
    for _ in range(100):
        await asyncio.sleep(0.01)
        if shadow.stats().rows_lost == 5:
            break
    sink.failing = False
    for _ in range(3):
        await shadow.handle("q")
    await shadow.aclose()
    stats = shadow.stats()
    assert stats.rows_lost == 5 and stats.rows_written == 3 == len(sink.rows)


async def test_aclose_cancels_challengers_still_running_and_records_them() -> None:
    shadow, sink = make_shadow(FakeTarget("champ"), FakeTarget("hangs", mode="hang"), challenger_timeout_s=30)
    await shadow.handle("q")
    await asyncio.sleep(0.01)
    await shadow.aclose(timeout_s=0.05)
    (row,) = sink.rows.values()
    assert row.challenger_answer.error == "cancelled: the shadow was closed"
    assert shadow.stats().in_flight == 0


def test_settings_that_could_never_shadow_are_refused() -> None:
    with pytest.raises(ConfigError, match="max_in_flight"):
        Shadow(FakeTarget("c"), {"a": FakeTarget("a"), "b": FakeTarget("b")}, max_in_flight=1)
    with pytest.raises(ConfigError, match="challenger_timeout_s"):
        Shadow(FakeTarget("c"), {"a": FakeTarget("a")}, challenger_timeout_s=0)


async def test_feedback_reaches_the_log_by_the_callers_request_id() -> None:
    champion, challenger = FakeTarget("champ"), FakeTarget("b")
    shadow, sink = make_shadow(champion, challenger)
    await shadow.handle("Hoeveel vakantiedagen?", request_id="msg-41")
    assert shadow.feedback("msg-41", "thumbs_down", comment="mail me at jan@example.com") is True
    assert shadow.feedback("msg-42", True) is True  # feedback on a request that was not shadowed is kept too
    assert shadow.feedback("msg-43", "none") is False  # "no feedback": nothing to keep
    with pytest.raises(ValueError, match="meh"):
        shadow.feedback("msg-41", "meh")
    with pytest.raises(ValueError, match="empty"):
        shadow.feedback("  ", "good")
    await shadow.aclose()
    assert rows_by_challenger(sink)["b"].request_id == "msg-41"
    assert {k: v.feedback.value for k, v in sink.feedback.items()} == {"msg-41": "bad", "msg-42": "good"}
    stored = sink.feedback["msg-41"]
    assert stored.source == "api" and stored.comment is not None
    assert "jan@example.com" not in stored.comment  # redacted like queries
    stats = shadow.stats()
    assert (stats.feedback_offered, stats.feedback_written, stats.feedback_lost) == (2, 2, 0)


async def test_long_request_ids_are_hashed_the_same_way_for_rows_and_feedback() -> None:
    shadow, sink = make_shadow(FakeTarget("champ"), FakeTarget("b"))
    long_id = "trace-" + "x" * 300
    shadow.record("q", Answer(text="a"), request_id=long_id)
    shadow.feedback(long_id, 0)
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert row.request_id.startswith("sha256:") and len(row.request_id) == 71
    assert list(sink.feedback) == [row.request_id]


async def test_feedback_without_a_store_is_not_kept_and_a_failing_store_counts_it_lost() -> None:
    bare = Shadow(FakeTarget("champ"), {"b": FakeTarget("b")})
    assert bare.feedback("r1", "good") is False
    await bare.aclose()
    shadow, sink = make_shadow(FakeTarget("champ"), FakeTarget("b"))
    sink.failing = True
    assert shadow.feedback("r1", "bad") is True  # queued: the caller is never blocked by the store
    await shadow.aclose()
    assert sink.feedback == {} and shadow.stats().feedback_lost == 1


async def test_admit_counts_once_and_a_broken_sampler_never_reaches_the_user() -> None:
    class Broken:
        def decide(self, user_id: str | None, now: datetime | None = None) -> bool:
            raise RuntimeError("sampler down")

    shadow, _ = make_shadow(FakeTarget("champ"), FakeTarget("b"))
    assert shadow.admit("u1") is True
    shadow.record("q", Answer(text="a"), user_id="u1", admitted=True)  # not counted or sampled again
    assert shadow.admit("u2") is True
    shadow.withdraw()  # could not be shadowed after all
    await shadow.aclose()
    stats = shadow.stats()
    assert (stats.seen, stats.sampled, stats.rows_written) == (2, 1, 1)
    broken, _ = make_shadow(FakeTarget("champ"), FakeTarget("b"), sampler=Broken())
    answer = await broken.handle("q")
    assert answer.text == "champ says hi" and broken.stats().sampled == 0
    await broken.aclose()
