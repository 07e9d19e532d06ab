"""The scripted chat model tests use: queue order, responders, scripted errors, running out, what it records."""

from __future__ import annotations

import asyncio

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ChatResponse, ProviderError
from ragreplay.core.types import TokenUsage
from ragreplay.providers.scripted import ScriptedChatModel, ScriptExhaustedError


def req(content: str = "hi") -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="user", content=content),))


async def test_replies_come_in_script_order_with_the_model_accounting() -> None:
    ready = ChatResponse(text="as is", model="other", cost_usd=1.5)
    model = ScriptedChatModel(
        ["first", ready, "third"], name="scripted:x", usage=TokenUsage(input=100, output=20), cost_usd=0.25
    )
    first, second, third = [await model.complete(req(str(i))) for i in range(3)]
    assert (first.text, second.text, third.text) == ("first", "as is", "third")
    assert first == ChatResponse(
        text="first", model="scripted:x", usage=TokenUsage(input=100, output=20), cost_usd=0.25
    )
    assert second is ready
    assert model.name == "scripted:x" and model.calls == 3 and model.remaining == 0


async def test_scripted_exceptions_are_raised_in_turn() -> None:
    model = ScriptedChatModel([ProviderError("HTTP 503", transient=True, status=503), "ok"])
    with pytest.raises(ProviderError, match="HTTP 503") as info:
        await model.complete(req())
    assert info.value.status == 503
    assert (await model.complete(req())).text == "ok"
    assert model.calls == 2


async def test_running_out_of_script_is_a_clear_error() -> None:
    model = ScriptedChatModel(["only"])
    await model.complete(req())
    with pytest.raises(ScriptExhaustedError, match=r"got call 2 but was scripted with 1 reply .*'again\?'"):
        await model.complete(req("again?"))
    with pytest.raises(ScriptExhaustedError, match="scripted with 0 replies"):
        await ScriptedChatModel([]).complete(req())


async def test_a_plain_responder_answers_every_call() -> None:
    model = ScriptedChatModel(lambda request: request.messages[-1].content.upper(), cost_usd=0.5)
    for word in ("a", "b", "c"):
        response = await model.complete(req(word))
        assert response.text == word.upper() and response.cost_usd == 0.5
    assert model.calls == 3 and model.remaining == 0


async def test_an_async_responder_is_awaited_and_its_errors_propagate() -> None:
    async def respond(request: ChatRequest) -> ChatResponse:
        await asyncio.sleep(0)
        if request.messages[-1].content == "boom":
            raise ProviderError("HTTP 400", transient=False, status=400)
        return ChatResponse(text="ok", model="m", latency_ms=12.0)

    model = ScriptedChatModel(respond)
    assert (await model.complete(req())).latency_ms == 12.0
    with pytest.raises(ProviderError, match="HTTP 400"):
        await model.complete(req("boom"))
    assert model.calls == 2 and model.in_flight == 0


async def test_requests_are_recorded_before_they_are_answered_and_in_flight_is_counted() -> None:
    gate = asyncio.Event()

    async def held(request: ChatRequest) -> str:
        await gate.wait()
        return "done"

    model = ScriptedChatModel(held)
    tasks = [asyncio.create_task(model.complete(req(f"q{i}"))) for i in range(3)]
    await asyncio.sleep(0.01)
    assert [r.messages[0].content for r in model.requests] == ["q0", "q1", "q2"]
    assert model.calls == 3 and model.in_flight == 3
    gate.set()
    assert {r.text for r in await asyncio.gather(*tasks)} == {"done"}
    assert model.in_flight == 0 and model.peak_in_flight == 3


async def test_failed_calls_are_recorded_too() -> None:
    model = ScriptedChatModel([ValueError("bad")])
    with pytest.raises(ValueError):
        await model.complete(req("recorded"))
    assert [r.messages[0].content for r in model.requests] == ["recorded"] and model.in_flight == 0


def test_a_single_reply_is_not_taken_for_a_script() -> None:
    with pytest.raises(TypeError, match="list of replies"):
        ScriptedChatModel("ok")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of replies"):
        ScriptedChatModel(ChatResponse(text="ok", model="m"))  # type: ignore[arg-type]
