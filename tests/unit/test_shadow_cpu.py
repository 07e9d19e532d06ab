"""The shadow's per-request savings keep its behaviour: redaction once per request, the forwarder check once
per target, the store's text check without rebuilding clean rows."""

from __future__ import annotations

from typing import Any

import pytest

from ragreplay.core.storable import is_storable, storable
from ragreplay.core.types import Answer, Case
from ragreplay.shadow import Shadow, ShadowLog, library
from ragreplay.shadow.library import RawRequest
from shadow_fakes import FakeSink, FakeTarget


class Forwarder:
    """A challenger that takes the user's own request."""

    name = "fwd"
    version = "v1"

    def __init__(self) -> None:
        self.forwarded: list[RawRequest] = []

    async def answer(self, question: str, case: Case) -> Answer:
        return Answer(text="asked")

    async def forward(self, raw: RawRequest, question: str, case: Case) -> Answer:
        self.forwarded.append(raw)
        return Answer(text="forwarded")


async def test_short_texts_are_redacted_once_per_request_whatever_the_number_of_challengers() -> None:
    seen: list[str] = []

    def redact(text: str) -> str:
        seen.append(text)
        return text.replace("lisa@acme.nl", "[EMAIL]")

    sink = FakeSink()
    challengers = {n: FakeTarget(n, text=f"{n} for lisa@acme.nl") for n in ("a", "b", "c")}
    shadow = Shadow(
        FakeTarget("champ"), challengers, log=ShadowLog(sink, flush_interval_s=0.01), redact=redact
    )
    shadow.record("mail lisa@acme.nl", Answer(text="champion answer"))
    await shadow.aclose()
    assert sorted(seen) == sorted(
        [
            "mail lisa@acme.nl",
            "champion answer",
            "a for lisa@acme.nl",
            "b for lisa@acme.nl",
            "c for lisa@acme.nl",
        ]
    )
    rows = list(sink.rows.values())
    assert len(rows) == 3 and {r.query for r in rows} == {"mail [EMAIL]"}
    assert {r.challenger_answer.text for r in rows} == {"a for [EMAIL]", "b for [EMAIL]", "c for [EMAIL]"}


async def test_whether_a_challenger_takes_the_raw_request_is_asked_once_per_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks: list[object] = []

    class Counting(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            checks.append(obj)
            return hasattr(obj, "forward")

    class CountingForwarder(metaclass=Counting):
        pass

    monkeypatch.setattr(library, "RequestForwarder", CountingForwarder)
    forwarder, plain = Forwarder(), FakeTarget("plain")
    sink = FakeSink()
    shadow = Shadow(FakeTarget("champ"), {"fwd": forwarder, "plain": plain}, log=ShadowLog(sink))
    raw = RawRequest("POST", "/ask", b'{"question": "q"}', "application/json")
    for i in range(5):
        shadow.record("q", Answer(text="a"), request_id=f"r{i}", raw=raw)
    await shadow.aclose()
    assert len(forwarder.forwarded) == 5 and len(plain.calls) == 5  # the plain one was asked the question
    assert sorted(map(id, checks)) == sorted([id(forwarder), id(plain)])


def test_is_storable_finds_what_storable_would_replace() -> None:
    clean = {"query": "q", "tags": {"k": "v"}, "contexts": [{"id": "é"}], "n": 3, "t": ("x",)}
    assert is_storable(clean) and storable(clean) == (clean, 0)
    for bad in ({"a": "x\x00"}, {"b\ud800": 1}, [["ok", "\udfff"]], ("\x00",), "é\ud800"):
        assert not is_storable(bad)
        fixed, n = storable(bad)
        assert n == 1 and is_storable(fixed)
