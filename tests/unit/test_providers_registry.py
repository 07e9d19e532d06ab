"""Spec parsing, provider settings and the model factory's stacks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragreplay.core.chat import ChatMessage, ChatRequest
from ragreplay.errors import ConfigError
from ragreplay.providers.cache import CachedModel
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.openai_compat import HTTP_CLIENT_ENV, HTTP_CLIENTS, LazySession, OpenAICompatModel
from ragreplay.providers.registry import OPENAI_DEFAULT_BASE_URL, ModelFactory, parse_spec

REQUEST = ChatRequest(messages=(ChatMessage(role="user", content="hello"),))


class DictBackend:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def cache_get(self, key: str) -> Mapping[str, Any] | None:
        return self.data.get(key)

    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        self.data.setdefault(key, dict(response))


async def no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


# --- parse_spec ---


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
        ("fake:default", ("fake", "default")),
        ("ollama:llama3:8b", ("ollama", "llama3:8b")),
        (" local:qwen ", ("local", "qwen")),
    ],
)
def test_parse_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    "spec", ["gpt-4.1", ":gpt-4.1", "openai:", "openai: ", "", "1x:model", "my provider:m"]
)
def test_parse_spec_rejects_malformed_specs_with_a_fix(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(spec)
    message = str(info.value)
    assert repr(spec) in message
    assert "provider:model" in message and "Fix:" in message


# --- settings ---


def test_provider_config_defaults_and_validation() -> None:
    cfg = ProviderConfig()
    assert (cfg.kind, cfg.api_key_header, cfg.max_concurrency, cfg.timeout_s, cfg.max_retries) == (
        "openai",
        "Authorization",
        8,
        60.0,
        5,
    )
    assert ModelSettings().cache_mode == "read-write"
    for bad in (
        {"max_concurrency": 0},
        {"requests_per_minute": 0},
        {"kind": "gemini"},
        {"api_key": "sk-x"},
    ):
        with pytest.raises(ValidationError):
            ProviderConfig.model_validate(bad)
    with pytest.raises(ValidationError):
        ModelSettings.model_validate({"cache_mode": "sometimes"})


# --- factory ---


async def test_fake_stack_is_cached_over_limited_over_raw_and_memoised() -> None:
    factory = ModelFactory(ModelSettings(), DictBackend(), env={})
    model = factory.build("fake:judge")
    assert isinstance(model, CachedModel)
    assert isinstance(model.inner, LimitedModel)
    assert isinstance(model.inner.inner, FakeChatModel)
    assert model.name == "fake:judge"
    assert factory.build("fake:judge") is model
    await model.complete(REQUEST)
    await model.complete(REQUEST)
    assert factory.cache_counts() == {"hits": 1, "misses": 1}


async def test_without_a_cache_backend_the_stack_is_limited_over_raw() -> None:
    model = ModelFactory(env={}).build("fake:default")
    assert isinstance(model, LimitedModel)
    assert (await model.complete(REQUEST)).text == "hello"


async def test_one_limit_per_provider_shared_by_its_models() -> None:
    settings = ModelSettings(providers={"fake": ProviderConfig(kind="fake", max_concurrency=2)})
    factory = ModelFactory(settings, None, env={"RAGREPLAY_FAKE_LATENCY_MS": "5"})
    judge, rewriter = factory.build("fake:judge"), factory.build("fake:rewriter")
    other = ModelFactory(settings, None, env={}).build("fake:judge")
    assert (
        isinstance(judge, LimitedModel)
        and isinstance(rewriter, LimitedModel)
        and isinstance(other, LimitedModel)
    )
    assert judge.gate is rewriter.gate
    assert other.gate is not judge.gate
    await asyncio.gather(*(m.complete(REQUEST) for m in [judge, rewriter] * 5))
    assert judge.gate.peak_in_flight == 2


async def test_fake_options_come_from_env(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    env = {
        "RAGREPLAY_FAKE_CALL_LOG": str(log),
        "RAGREPLAY_FAKE_FAIL_FIRST": "2",
        "RAGREPLAY_FAKE_HANG_AFTER": "5",
    }
    factory = ModelFactory(env=env, sleep=no_sleep)
    judge, rewriter = factory.build("fake:judge"), factory.build("fake:rewriter")
    assert (await judge.complete(REQUEST)).text == "hello"  # two simulated 503s were retried
    await rewriter.complete(REQUEST)
    assert isinstance(judge, LimitedModel)
    assert judge.retries == 2
    assert isinstance(judge.inner, FakeChatModel) and judge.inner.hang_after == 5
    assert [json.loads(line)["n"] for line in log.read_text().splitlines()] == [1, 2]


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("RAGREPLAY_FAKE_HANG_AFTER", "soon"),
        ("RAGREPLAY_FAKE_LATENCY_MS", "fast"),
        ("RAGREPLAY_FAKE_FAIL_FIRST", "-1"),
    ],
)
def test_bad_fake_env_values_name_the_variable(var: str, value: str) -> None:
    with pytest.raises(ConfigError, match=var):
        ModelFactory(env={var: value}).build("fake:default")


def test_openai_needs_its_key_env_var() -> None:
    with pytest.raises(ConfigError) as info:
        ModelFactory(env={}).build("openai:gpt-4.1-mini")
    assert "OPENAI_API_KEY" in str(info.value)
    assert "Fix:" in str(info.value)


async def test_openai_builds_with_key_and_default_or_env_base_url() -> None:
    factory = ModelFactory(env={"OPENAI_API_KEY": "sk-test"})
    model = factory.build("openai:gpt-4o-mini")
    assert isinstance(model, LimitedModel) and isinstance(model.inner, OpenAICompatModel)
    assert model.inner.url == OPENAI_DEFAULT_BASE_URL + "/chat/completions"
    assert model.inner.price is not None and model.inner.price.input_per_mtok == 0.15
    other = ModelFactory(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"})
    built = other.build("openai:gpt-4o")
    assert isinstance(built, LimitedModel) and isinstance(built.inner, OpenAICompatModel)
    assert built.inner.url == "http://127.0.0.1:9/v1/chat/completions"
    await factory.aclose()
    await other.aclose()


def test_blocking_switch_stops_real_providers_but_not_fakes() -> None:
    env = {"RAGREPLAY_BLOCK_REAL_MODELS": "1", "OPENAI_API_KEY": "sk-test"}
    settings = ModelSettings(providers={"local": ProviderConfig(base_url="http://127.0.0.1:8000/v1")})
    factory = ModelFactory(settings, env=env)
    for spec in ("openai:gpt-4.1", "local:qwen"):
        with pytest.raises(ConfigError, match="real model calls are blocked in tests"):
            factory.build(spec)
    assert factory.build("fake:default").name == "fake:default"


def test_unknown_provider_says_how_to_declare_it() -> None:
    with pytest.raises(ConfigError) as info:
        ModelFactory(env={}).build("gemini:pro")
    assert "'gemini'" in str(info.value)
    assert "providers:" in str(info.value)


def test_custom_provider_needs_a_base_url_and_its_key() -> None:
    settings = ModelSettings(
        providers={
            "nourl": ProviderConfig(),
            "azure": ProviderConfig(
                base_url="https://x.openai.azure.com/openai/v1",
                api_key_env="AZURE_KEY",
                api_key_header="api-key",
            ),
            "local": ProviderConfig(base_url="http://127.0.0.1:8000/v1", max_concurrency=32),
        }
    )
    factory = ModelFactory(settings, env={})
    with pytest.raises(ConfigError, match="base_url"):
        factory.build("nourl:m")
    with pytest.raises(ConfigError, match="AZURE_KEY"):
        factory.build("azure:gpt-4o")
    local = factory.build("local:qwen")
    assert isinstance(local, LimitedModel)
    assert local.gate.max_concurrency == 32
    assert "local:qwen" in factory.unpriced


@pytest.mark.parametrize("client_kind", HTTP_CLIENTS)
async def test_one_lazy_session_per_provider_closed_by_aclose(client_kind: str) -> None:
    settings = ModelSettings(
        providers={
            "local": ProviderConfig(base_url="http://127.0.0.1:9/v1", max_concurrency=6, timeout_s=9),
            "other": ProviderConfig(base_url="http://127.0.0.1:9/v1"),
        }
    )
    factory = ModelFactory(settings, env={HTTP_CLIENT_ENV: client_kind})
    models = [factory.build(spec) for spec in ("local:a", "local:b", "other:a")]
    inner = [m.inner for m in models if isinstance(m, LimitedModel)]
    assert len(inner) == 3 and all(isinstance(m, OpenAICompatModel) for m in inner)
    local_a, local_b, other = (m._client for m in inner)  # type: ignore[attr-defined]
    pool_class = HttpPool if client_kind == "http11" else LazySession
    assert isinstance(local_a, pool_class) and local_a is local_b and other is not local_a
    assert (local_a.max_connections, local_a.timeout_s) == (6, 9)
    assert local_a.closed  # nothing opened before the first request
    session = await local_a.get()
    await factory.aclose()
    assert session.closed and local_a.closed and other.closed
