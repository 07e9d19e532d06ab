"""Structured output: the judges' JSON schema is sent as response_format, with a fallback for endpoints that
refuse it (json_object, then none), remembered per model; tolerant parsing reads what comes back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from builders import make_case
from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError, ResponseFormat
from ragreplay.core.types import Answer, Fit
from ragreplay.judges.fit import FIT_RESPONSE_FORMAT, FitJudge, FitReply
from ragreplay.judges.pairwise import DEFAULT_AXES, LLMPairwiseJudge, reply_schema
from ragreplay.providers.cache import cache_key
from ragreplay.providers.openai_compat import OpenAICompatModel
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.replay.rewrite import REWRITE_RESPONSE_FORMAT

Refuses = Callable[[dict[str, Any]], str | None]


def completion(content: str) -> dict[str, Any]:
    return {"model": "m", "choices": [{"message": {"role": "assistant", "content": content}}]}


class Endpoint:
    """A loopback /chat/completions that refuses some response_format kinds with a 400, as real servers do."""

    def __init__(self, refuse: Refuses, reply: str) -> None:
        self.refuse, self.reply = refuse, reply
        self.bodies: list[dict[str, Any]] = []

    @property
    def formats(self) -> list[str]:
        """The response_format type of each request received, ``none`` where there was none."""
        return [str(b.get("response_format", {}).get("type", "none")) for b in self.bodies]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        refusal = self.refuse(body)
        if refusal is not None:
            error = {"error": {"message": refusal, "type": "invalid_request_error"}}
            return web.json_response(error, status=400)
        return web.json_response(completion(self.reply))


@pytest.fixture
async def endpoint() -> AsyncIterator[
    Callable[[Refuses, str], Awaitable[tuple[Endpoint, OpenAICompatModel]]]
]:
    servers: list[TestServer] = []
    models: list[OpenAICompatModel] = []

    async def start(refuse: Refuses, reply: str) -> tuple[Endpoint, OpenAICompatModel]:
        served = Endpoint(refuse, reply)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", served.handle)
        server = TestServer(app)
        await server.start_server()
        servers.append(server)
        model = OpenAICompatModel("test:m", str(server.make_url("/v1")), "m")
        models.append(model)
        return served, model

    yield start
    for model in models:
        await model.aclose()
    for server in servers:
        await server.close()


def never(body: dict[str, Any]) -> str | None:
    return None


def no_schema(body: dict[str, Any]) -> str | None:
    kind = body.get("response_format", {}).get("type")
    return (
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported"
        if kind == "json_schema"
        else None
    )


def no_format(body: dict[str, Any]) -> str | None:
    return "response_format is not supported by this model" if "response_format" in body else None


CASE = make_case(query="How many days?", old_answer="25 days.")


async def test_the_fit_judge_sends_its_schema_strict(endpoint: Any) -> None:
    served, model = await endpoint(never, '{"verdict": "FIT", "reason": "same"}')
    judgment = await FitJudge(model).judge(CASE, "How many days?", Answer(text="Twenty-five days."))
    assert judgment.fit == Fit.FIT
    (body,) = served.bodies
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "fit_verdict", "schema": FitReply.model_json_schema(), "strict": True},
    }
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["verdict", "reason"] and schema["additionalProperties"] is False
    assert schema["properties"]["verdict"]["enum"] == ["FIT", "NO_FIT"]


def test_the_pairwise_and_rewrite_schemas_are_strict() -> None:
    schema = reply_schema(DEFAULT_AXES)
    assert (
        schema["required"] == ["scores_a", "scores_b", "winner", "reason"]
        and not schema["additionalProperties"]
    )
    assert schema["properties"]["winner"]["enum"] == ["A", "B", "tie"]
    (scores,) = schema["$defs"].values()
    assert scores["required"] == [a.name for a in DEFAULT_AXES] and scores["additionalProperties"] is False
    assert all(p["enum"] == [1, 2, 3, 4, 5] for p in scores["properties"].values())
    custom = reply_schema(
        [DEFAULT_AXES[0].model_copy(update={"name": "json"})]
    )  # a BaseModel attribute's name
    assert list(next(iter(custom["$defs"].values()))["properties"]) == ["json"]
    judge = LLMPairwiseJudge(ScriptedChatModel([]))
    assert judge.response_format.json_schema == schema and judge.response_format.name == "pairwise_verdict"
    assert REWRITE_RESPONSE_FORMAT.json_schema["required"] == ["standalone", "query"]


async def test_a_refused_schema_falls_back_to_json_mode_once_and_is_remembered(endpoint: Any) -> None:
    served, model = await endpoint(no_schema, '{"verdict": "NO_FIT", "reason": "differs"}')
    judge = FitJudge(model)
    first = await judge.judge(CASE, "How many days?", Answer(text="20 days."))
    assert first.fit == Fit.NO_FIT and served.formats == ["json_schema", "json_object"]
    assert model.reply_format == "json_object"
    second = await judge.judge(CASE, "How many days?", Answer(text="25 days."))
    assert second.fit == Fit.NO_FIT and served.formats == ["json_schema", "json_object", "json_object"]


async def test_an_endpoint_without_json_mode_gets_no_format_and_prose_is_still_read(endpoint: Any) -> None:
    served, model = await endpoint(no_format, 'Sure! Here it is: {"verdict": "FIT", "reason": "same"}')
    judge = FitJudge(model)
    assert (await judge.judge(CASE, "How many days?", Answer(text="25 days."))).fit == Fit.FIT
    assert served.formats == ["json_schema", "json_object", "none"] and model.reply_format == "none"
    assert (await judge.judge(CASE, "How many days?", Answer(text="25 days."))).fit == Fit.FIT
    assert served.formats[3:] == ["none"]


async def test_other_400s_are_errors_and_change_nothing(endpoint: Any) -> None:
    served, model = await endpoint(lambda body: "max_tokens is too large", "unused")
    with pytest.raises(ProviderError) as raised:
        await FitJudge(model).judge(CASE, "How many days?", Answer(text="25 days."))
    assert raised.value.status == 400 and not raised.value.transient
    assert served.formats == ["json_schema"] and model.reply_format == "json_schema"


def test_response_format_is_part_of_the_cache_key_only_when_set() -> None:
    plain = ChatRequest(messages=(ChatMessage(role="user", content="hi"),), json_mode=True)
    assert "response_format" not in plain.cache_payload()
    schema = plain.model_copy(update={"response_format": FIT_RESPONSE_FORMAT})
    other = plain.model_copy(
        update={"response_format": ResponseFormat(name="x", json_schema={"type": "object"})}
    )
    assert schema.cache_payload()["response_format"] == FIT_RESPONSE_FORMAT.model_dump()
    assert len({cache_key("m", plain), cache_key("m", schema), cache_key("m", other)}) == 3
    assert json.loads(json.dumps(schema.cache_payload())) == schema.cache_payload()


@pytest.mark.parametrize("reply_format", [0, 1, 2])
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"temperature": 0.25, "max_tokens": 9, "json_mode": True},
        {"temperature": float("nan"), "max_tokens": 0},
        {"response_format": FIT_RESPONSE_FORMAT},
        {"response_format": ResponseFormat(name="\u00fc", json_schema={"b": [1, 2.5, None], "a": "\u2028"})},
    ],
)
def test_the_request_bytes_joined_from_parts_are_the_encoded_request_body(
    reply_format: int, fields: dict[str, Any]
) -> None:
    """``request_bytes`` joins memoised system messages and response formats by hand; the bytes sent must be
    exactly pydantic-core's encoding of ``request_body`` (with and without messages, for each format kind)."""
    from pydantic_core import to_json

    model = OpenAICompatModel("x:m\u00e9", "http://127.0.0.1:9/v1", 'm\u00e9 "q"')
    for messages in (
        (
            ChatMessage(role="system", content='s \u00fc "q" \\ \u2028 \x01 \U0001f600'),
            ChatMessage(role="user", content="u </x> \u00e9"),
            ChatMessage(role="assistant", content=""),
            ChatMessage(role="system", content="second system"),
        ),
        (ChatMessage(role="user", content="only"),),
        (),
    ):
        request = ChatRequest(messages=messages, **fields)
        for _ in range(2):  # the second time from the memo
            expected = to_json(model.request_body(request, reply_format))
            assert model.request_bytes(request, reply_format) == expected
    model.model = "renamed"
    assert model.request_bytes(request, reply_format) == to_json(model.request_body(request, reply_format))
