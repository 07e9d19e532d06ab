"""The response cache: modes, counters, keys and in-flight de-duplication."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ChatResponse, ProviderError
from ragreplay.core.types import TokenUsage
from ragreplay.providers.cache import CachedModel, cache_key
from ragreplay.providers.scripted import ScriptedChatModel


class DictBackend:
    """An in-memory cache backend that keeps only what survives a JSON round trip."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}
        self.puts = 0

    def cache_get(self, key: str) -> Mapping[str, Any] | None:
        return self.data.get(key)

    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        self.puts += 1
        self.data.setdefault(key, json.loads(json.dumps(dict(response))))


class BrokenBackend(DictBackend):
    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        raise OSError("disk full")


class PaidModel(ScriptedChatModel):
    """Answers "answer N" on its N-th call, costs money, and can be held on a gate; raises ``errors`` first."""

    def __init__(self, gate: asyncio.Event | None = None, errors: list[Exception] | None = None) -> None:
        pending = list(errors or [])

        async def respond(request: ChatRequest) -> ChatResponse:
            if gate is not None:
                await gate.wait()
            if pending:
                raise pending.pop(0)
            return ChatResponse(
                text=f"answer {self.calls}",
                model="m",
                usage=TokenUsage(input=100, output=20),
                cost_usd=0.25,
                latency_ms=812.0,
            )

        super().__init__(respond, name="paid:model")


def req(content: str = "hi", temperature: float = 0.0, **hints: Any) -> ChatRequest:
    return ChatRequest(
        messages=(ChatMessage(role="user", content=content),), temperature=temperature, hints=hints
    )


async def test_read_write_stores_misses_and_serves_hits_for_free() -> None:
    backend, inner = DictBackend(), PaidModel()
    model = CachedModel(inner, backend, "read-write")
    first = await model.complete(req())
    second = await model.complete(req())
    assert inner.calls == 1
    assert (model.hits, model.misses) == (1, 1)
    assert first.cached is False and first.cost_usd == 0.25
    assert second.text == first.text
    assert second.cached is True
    assert second.cost_usd == 0.0
    assert second.usage == TokenUsage(input=100, output=20)
    stored = backend.data[cache_key("paid:model", req())]
    assert stored["cost_usd"] == 0.25 and stored["usage"] == {"input": 100, "output": 20}


async def test_read_only_serves_hits_but_never_writes() -> None:
    backend, inner = DictBackend(), PaidModel()
    await CachedModel(inner, backend, "read-write").complete(req("known"))
    model = CachedModel(inner, backend, "read-only")
    hit = await model.complete(req("known"))
    await model.complete(req("new"))
    await model.complete(req("new"))
    assert hit.cached is True
    assert inner.calls == 3
    assert (model.hits, model.misses) == (1, 2)
    assert backend.puts == 1
    assert cache_key("paid:model", req("new")) not in backend.data


async def test_off_always_calls_the_model_and_touches_nothing() -> None:
    backend, inner = DictBackend(), PaidModel()
    await CachedModel(inner, backend, "read-write").complete(req())
    model = CachedModel(inner, backend, "off")
    response = await model.complete(req())
    assert response.cached is False
    assert inner.calls == 2
    assert (model.hits, model.misses) == (0, 0)
    assert backend.puts == 1


async def test_concurrent_identical_requests_make_one_inner_call() -> None:
    gate = asyncio.Event()
    inner = PaidModel(gate=gate)
    model = CachedModel(inner, DictBackend(), "read-only")
    tasks = [asyncio.create_task(model.complete(req())) for _ in range(5)]
    await asyncio.sleep(0.01)
    gate.set()
    responses = await asyncio.gather(*tasks)
    assert inner.calls == 1
    assert {r.text for r in responses} == {"answer 1"}
    assert sum(r.cached for r in responses) == 4
    assert (model.hits, model.misses) == (4, 1)


async def test_a_failed_call_fails_its_followers_and_is_not_cached() -> None:
    gate = asyncio.Event()
    inner = PaidModel(gate=gate, errors=[ProviderError("boom", transient=True, status=503)])
    backend = DictBackend()
    model = CachedModel(inner, backend, "read-write")
    tasks = [asyncio.create_task(model.complete(req())) for _ in range(3)]
    await asyncio.sleep(0.01)
    gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, ProviderError) for r in results)
    assert backend.data == {}
    assert (await model.complete(req())).text == "answer 2"


async def test_a_cancelled_leader_hands_over_to_a_follower() -> None:
    gate = asyncio.Event()
    inner = PaidModel(gate=gate)
    model = CachedModel(inner, DictBackend(), "read-write")
    leader = asyncio.create_task(model.complete(req()))
    await asyncio.sleep(0.01)
    follower = asyncio.create_task(model.complete(req()))
    await asyncio.sleep(0.01)
    leader.cancel()
    await asyncio.sleep(0.01)
    gate.set()
    response = await follower
    assert response.text == "answer 2"
    assert leader.cancelled()


async def test_key_covers_model_and_semantic_params_but_not_hints() -> None:
    base = cache_key("openai:gpt-4.1", req())
    assert cache_key("openai:gpt-4.1", req(question="ignored")) == base
    assert cache_key("openai:gpt-4.1-mini", req()) != base
    assert cache_key("openai:gpt-4.1", req(temperature=0.7)) != base
    assert cache_key("openai:gpt-4.1", req("other")) != base
    with_version = ChatRequest(messages=req().messages, prompt_version="v2")
    assert cache_key("openai:gpt-4.1", with_version) != base
    assert len(base) == 64


async def test_unreadable_entries_are_misses() -> None:
    backend, inner = DictBackend(), PaidModel()
    backend.data[cache_key("paid:model", req())] = {"not": "a response"}
    model = CachedModel(inner, backend, "read-write")
    response = await model.complete(req())
    assert response.cached is False
    assert inner.calls == 1


async def test_a_failing_store_still_returns_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    model = CachedModel(PaidModel(), BrokenBackend(), "read-write")
    response = await model.complete(req())
    assert response.text == "answer 1"
    assert "could not store" in caplog.text


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="read-write"):
        CachedModel(PaidModel(), DictBackend(), "sometimes")  # type: ignore[arg-type]


def test_cache_keys_are_the_sha256_of_the_canonical_json_of_model_and_payload() -> None:
    """The key is built around the payload's canonical text made once; it must stay the hash it always was
    (SHA-256 of the sorted, compact, non-ASCII-kept JSON of model and payload), or stored caches stop hitting."""
    import hashlib

    from ragreplay.core.chat import ResponseFormat
    from ragreplay.core.ids import CanonicalDict, canonical_json

    request = ChatRequest(
        messages=(ChatMessage(role="system", content='ü "q" \u2028'), ChatMessage(role="user", content="x")),
        temperature=0.3,
        max_tokens=7,
        response_format=ResponseFormat(name="fit", json_schema={"b": [1, 2.5, None], "a": {"z": True}}),
        prompt_version="v2",
    )
    payload = {
        "messages": [m.model_dump() for m in request.messages],
        "temperature": 0.3,
        "max_tokens": 7,
        "json_mode": False,
        "prompt_version": "v2",
        "response_format": request.response_format.model_dump() if request.response_format else None,
    }
    whole = json.dumps(
        {"model": "mock:ü", "request": payload}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert cache_key("mock:ü", request) == hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert request.cache_payload() == payload
    made = CanonicalDict(request.cache_payload())
    assert made == payload and canonical_json(made) == canonical_json(payload)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"temperature": 0.7, "max_tokens": 64, "json_mode": True, "prompt_version": "p\u00e9"},
        {"temperature": -0.0, "max_tokens": 0},
        {"temperature": 1e-7},
        {"temperature": float("nan")},
        {"temperature": float("inf")},
    ],
)
@pytest.mark.parametrize("with_format", [False, True])
def test_the_fast_canonical_payload_is_the_payload_and_text_the_encoder_makes(
    fields: dict[str, Any], with_format: bool
) -> None:
    """``canonical_cache_payload`` joins the canonical JSON by hand (memoising system prompts and formats):
    dict and text must equal ``CanonicalDict(cache_payload())`` for every value kind, or cache keys change."""
    from ragreplay.core.chat import ResponseFormat
    from ragreplay.core.ids import CanonicalDict

    fmt = ResponseFormat(
        name="f\u00fc", json_schema={"b": [1, 2.5, None], "a": {"z": True, "\u2028": "\x00"}}
    )
    system = 'sys \u00fc "quoted" \\ \u2028 \n\t \x01 \U0001f600'
    for _ in range(2):  # the second time from the memo
        request = ChatRequest(
            messages=(
                ChatMessage(role="system", content=system),
                ChatMessage(role="user", content="u \u00e9 \ud7ff </x>"),
                ChatMessage(role="assistant", content=""),
            ),
            response_format=fmt if with_format else None,
            **fields,
        )
        fast = request.canonical_cache_payload()
        slow = CanonicalDict(request.cache_payload())
        assert fast.canonical == slow.canonical
        assert json.dumps(fast, sort_keys=True) == json.dumps(slow, sort_keys=True)
        assert cache_key("m", request) == cache_key("m", request.model_copy())
