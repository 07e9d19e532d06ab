"""Built-in providers: each spec builds the right URL, headers and key without a config file; the environment and
the config file move them; the test switch refuses every real provider, the new ones included."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from ragreplay.errors import ConfigError
from ragreplay.ports import ChatModel
from ragreplay.providers.anthropic import AnthropicModel
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.openai_compat import OpenAICompatModel
from ragreplay.providers.presets import AZURE_API_VERSION, PRESETS
from ragreplay.providers.registry import ModelFactory


def raw(model: ChatModel) -> ChatModel:
    assert isinstance(model, LimitedModel)
    return model.inner


def openai_compat(
    spec: str, env: Mapping[str, str], settings: ModelSettings | None = None
) -> OpenAICompatModel:
    model = raw(ModelFactory(settings, env=env).build(spec))
    assert isinstance(model, OpenAICompatModel)
    return model


@pytest.mark.parametrize(
    ("spec", "url"),
    [
        ("ollama:llama3.1", "http://localhost:11434/v1/chat/completions"),
        ("ollama:llama3.1:8b", "http://localhost:11434/v1/chat/completions"),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1/chat/completions"),
        ("llamacpp:any", "http://localhost:8080/v1/chat/completions"),
        ("lmstudio:qwen2.5-7b-instruct", "http://localhost:1234/v1/chat/completions"),
    ],
)
def test_local_presets_need_no_config_nor_key_and_are_free(spec: str, url: str) -> None:
    model = openai_compat(spec, {})
    assert model.url == url
    assert model.model == spec.partition(":")[2]
    assert "Authorization" not in model._endpoint.headers
    assert model.price is not None and model.price.input_per_mtok == 0  # local tokens cost nothing


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1:9999", "http://127.0.0.1:9999/v1/chat/completions"),  # Ollama's own spelling
        (
            "0.0.0.0:11434",
            "http://127.0.0.1:11434/v1/chat/completions",
        ),  # a bind address: reach it on loopback
        ("https://gpu.example:443", "https://gpu.example:443/v1/chat/completions"),
        ("http://box:11434/custom/v1/", "http://box:11434/custom/v1/chat/completions"),
    ],
)
def test_ollama_host_moves_the_ollama_preset(host: str, url: str) -> None:
    assert openai_compat("ollama:llama3.1", {"OLLAMA_HOST": host}).url == url


def test_each_local_preset_has_its_base_url_variable_and_the_config_file_comes_first() -> None:
    for name, var in (
        ("vllm", "VLLM_BASE_URL"),
        ("llamacpp", "LLAMACPP_BASE_URL"),
        ("lmstudio", "LMSTUDIO_BASE_URL"),
    ):
        assert (
            openai_compat(f"{name}:m", {var: "http://10.0.0.5:7000/v1"}).url
            == "http://10.0.0.5:7000/v1/chat/completions"
        )
    settings = ModelSettings(
        providers={"ollama": ProviderConfig(base_url="http://cfg:1/v1", max_concurrency=2)}
    )
    model = openai_compat("ollama:llama3.1", {"OLLAMA_HOST": "env:2"}, settings)
    assert model.url == "http://cfg:1/v1/chat/completions"
    factory = ModelFactory(settings, env={})
    assert factory.provider_config("ollama").max_concurrency == 2
    assert factory.provider_config("ollama").api_key_optional  # unset fields still come from the preset


def test_an_optional_key_is_sent_when_set() -> None:
    assert openai_compat("vllm:m", {"VLLM_API_KEY": "tok"})._endpoint.headers["Authorization"] == "Bearer tok"
    assert (
        openai_compat("llamacpp:m", {"LLAMA_API_KEY": "t2"})._endpoint.headers["Authorization"] == "Bearer t2"
    )


def test_azure_deployment_url_api_version_and_api_key_header() -> None:
    env = {"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/", "AZURE_OPENAI_API_KEY": "az-key"}
    model = openai_compat("azure:my-gpt4o", env)
    assert model.url == (
        f"https://res.openai.azure.com/openai/deployments/my-gpt4o/chat/completions?api-version={AZURE_API_VERSION}"
    )
    assert model._endpoint.headers["api-key"] == "az-key" and "Authorization" not in model._endpoint.headers
    versioned = openai_compat("azure:d", {**env, "AZURE_OPENAI_API_VERSION": "2025-01-01-preview"})
    assert versioned.url.endswith("/openai/deployments/d/chat/completions?api-version=2025-01-01-preview")
    v1 = openai_compat(
        "azure:gpt-4o", {**env, "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/openai/v1"}
    )
    assert (
        v1.url == "https://res.openai.azure.com/openai/v1/chat/completions"
    )  # Azure's v1 API: no api-version
    assert v1.price is not None  # the deployment named like its model is priced from the azure table


def test_azure_says_which_variables_it_needs() -> None:
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        ModelFactory(env={"AZURE_OPENAI_API_KEY": "k"}).build("azure:d")
    with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY"):
        ModelFactory(env={"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}).build("azure:d")


def test_anthropic_preset_key_base_url_and_max_tokens() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        ModelFactory(env={}).build("anthropic:claude-sonnet-4-5")
    model = raw(ModelFactory(env={"ANTHROPIC_API_KEY": "sk-ant"}).build("anthropic:claude-sonnet-4-5"))
    assert isinstance(model, AnthropicModel)
    assert model.url == "https://api.anthropic.com/v1/messages" and model.max_tokens == 4096
    assert model.price is not None and model.price.output_per_mtok > model.price.input_per_mtok
    settings = ModelSettings(providers={"anthropic": ProviderConfig(max_tokens=512)})
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    moved = raw(ModelFactory(settings, env=env).build("anthropic:claude-x"))
    assert isinstance(moved, AnthropicModel)
    assert moved.url == "http://127.0.0.1:9/v1/messages" and moved.max_tokens == 512


@pytest.mark.parametrize("provider", sorted(set(PRESETS) - {"fake"}))
def test_the_test_switch_refuses_every_real_provider(provider: str) -> None:
    env = {
        "RAGREPLAY_BLOCK_REAL_MODELS": "1",
        "OPENAI_API_KEY": "k",
        "ANTHROPIC_API_KEY": "k",
        "AZURE_OPENAI_API_KEY": "k",
        "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com",
    }
    with pytest.raises(ConfigError, match="real model calls are blocked in tests"):
        ModelFactory(env=env).build(f"{provider}:some-model")


def test_an_unpriced_model_is_said_to_have_an_unknown_price(caplog: pytest.LogCaptureFixture) -> None:
    factory = ModelFactory(env={"OPENAI_API_KEY": "k"})
    with caplog.at_level(logging.WARNING):
        factory.build("openai:gpt-from-the-future")
        factory.build("openai:gpt-4o-mini")
    assert factory.unpriced == {"openai:gpt-from-the-future"}
    assert "price unknown" in caplog.text and "cost is reported as 0" not in caplog.text
