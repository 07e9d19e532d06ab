"""The optional LiteLLM backend: a one-line message naming the extra when litellm is missing, and (when it is
installed) a completion through LiteLLM's ``mock_response`` with usage, price and error classes."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.errors import MissingExtraError
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.litellm_model import LiteLLMModel, import_litellm
from ragreplay.providers.pricing import lookup_price
from ragreplay.providers.registry import ModelFactory

REQUEST = ChatRequest(
    messages=(ChatMessage(role="user", content="Who runs HR?"),), json_mode=True, max_tokens=64
)
HAS_LITELLM = importlib.util.find_spec("litellm") is not None
needs_litellm = pytest.mark.skipif(
    not HAS_LITELLM,
    reason="litellm is not installed (pip install 'ragreplay[litellm]'); the absent case is tested",
)


def test_without_litellm_the_spec_names_the_extra_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # Python's own way to make `import litellm` fail
    with pytest.raises(MissingExtraError) as info:
        ModelFactory(env={}).build("litellm:gemini/gemini-2.5-flash")
    message = str(info.value)
    assert "\n" not in message and "'litellm:gemini/gemini-2.5-flash'" in message
    assert "pip install 'ragreplay[litellm]'" in message


def test_request_options_carry_json_mode_tokens_and_no_hints() -> None:
    model = LiteLLMModel(
        "litellm:x/y", "x/y", sys.modules[__name__], base_url="http://127.0.0.1:9", api_key="k"
    )
    options = model.request_options(REQUEST.model_copy(update={"hints": {"secret": 1}}))
    assert options["model"] == "x/y" and options["max_tokens"] == 64
    assert options["response_format"] == {"type": "json_object"}
    assert (options["api_base"], options["api_key"], options["num_retries"]) == ("http://127.0.0.1:9", "k", 0)
    assert "secret" not in str(options)


@needs_litellm
async def test_a_completion_through_litellm_mock_response() -> None:
    litellm = import_litellm("litellm:openai/gpt-4o-mini")
    price = lookup_price("litellm:openai/gpt-4o-mini")
    assert price is not None
    model = LiteLLMModel(
        "litellm:openai/gpt-4o-mini",
        "openai/gpt-4o-mini",
        litellm,
        api_key="sk-not-used",
        price=price,
        extra={"mock_response": '{"verdict": "FIT"}'},
    )
    response = await model.complete(REQUEST)
    assert response.text == '{"verdict": "FIT"}'
    assert response.usage.input > 0 and response.usage.output > 0
    assert response.cost_usd == pytest.approx(price.cost(response.usage))


@needs_litellm
async def test_litellm_errors_are_classified_by_status() -> None:
    litellm = import_litellm("litellm:openai/gpt-4o-mini")
    for mock, transient in (("litellm.RateLimitError", True), ("litellm.InternalServerError", True)):
        model = LiteLLMModel(
            "litellm:openai/m", "openai/m", litellm, api_key="k", extra={"mock_response": mock}
        )
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
        assert info.value.transient is transient, mock


@needs_litellm
def test_the_factory_builds_a_limited_litellm_model() -> None:
    built = ModelFactory(env={}).build("litellm:anthropic/claude-sonnet-4-5")
    assert isinstance(built, LimitedModel) and isinstance(built.inner, LiteLLMModel)
    assert built.inner.price == lookup_price("anthropic:claude-sonnet-4-5")
