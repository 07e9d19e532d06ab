"""Turns ``provider:model`` specs into ready-to-use chat models: Cached(Limited(raw)).

One :class:`ModelFactory` per run. Models of the same provider share one HTTP connection pool and one set of
limits, so the judge and the rewriter together never exceed the provider's concurrency or rate limit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ragreplay.core.retry import RetryPolicy
from ragreplay.errors import ConfigError
from ragreplay.ports import CacheBackend, ChatModel, SharedRateLimit
from ragreplay.providers.anthropic import AnthropicModel
from ragreplay.providers.cache import CachedModel
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.fake import FakeChatModel, FakeCounters
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.limits import LimitedModel, Sleep
from ragreplay.providers.litellm_model import LiteLLMModel, import_litellm
from ragreplay.providers.openai_compat import OpenAICompatModel, http_client
from ragreplay.providers.presets import (
    ANTHROPIC_MAX_TOKENS,
    PRESETS,
    azure_deployment_url,
    resolve,
)
from ragreplay.providers.presets import (
    OPENAI_DEFAULT_BASE_URL as OPENAI_DEFAULT_BASE_URL,  # re-exported: where openai: goes by default
)
from ragreplay.providers.pricing import lookup_price, price_table

if TYPE_CHECKING:
    from ragreplay.providers.aiohttp_session import LazySession

BLOCK_ENV = "RAGREPLAY_BLOCK_REAL_MODELS"
FAKE_ENV = {
    "latency_ms": "RAGREPLAY_FAKE_LATENCY_MS",
    "call_log": "RAGREPLAY_FAKE_CALL_LOG",
    "hang_after": "RAGREPLAY_FAKE_HANG_AFTER",
    "fail_first": "RAGREPLAY_FAKE_FAIL_FIRST",
}

_PROVIDER = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_SPEC_FIX = "write it as 'provider:model', e.g. 'openai:gpt-4.1-mini' or 'fake:default'"
log = logging.getLogger(__name__)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``provider:model`` at the first colon (models may contain colons: ``ollama:llama3:8b``)."""
    provider, sep, model = str(spec).strip().partition(":")
    if not sep or not provider or not model.strip():
        raise ConfigError(f"model spec {spec!r} is not 'provider:model'. Fix: {_SPEC_FIX}")
    if not _PROVIDER.match(provider):
        raise ConfigError(
            f"model spec {spec!r} has an invalid provider name {provider!r} (letters, digits, _ . - only). "
            f"Fix: {_SPEC_FIX}"
        )
    return provider, model.strip()


class ModelFactory:
    """Builds and remembers the model stack for each spec; :meth:`aclose` releases the HTTP sessions.

    Building needs no event loop: each provider's connection pool is opened on its first request (the HTTP
    client is the one ``RAGREPLAY_HTTP_CLIENT`` in ``env`` names: ``http11`` by default, or ``aiohttp``).

    ``env`` is where keys and fake options are read (``os.environ`` when not given). With
    ``RAGREPLAY_BLOCK_REAL_MODELS=1`` in it, only fake providers can be built.
    """

    def __init__(
        self,
        settings: ModelSettings | None = None,
        cache: CacheBackend | None = None,
        env: Mapping[str, str] | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        shared_rate: SharedRateLimit | None = None,
    ) -> None:
        self.settings = settings or ModelSettings()
        self.shared_rate = shared_rate
        """Where a provider's ``requests_per_minute`` is shared with other processes (``--workers``)."""
        self.cache = cache
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.prices = price_table(self.settings.prices)
        self.unpriced: set[str] = set()
        self._sleep = sleep
        self._models: dict[str, ChatModel] = {}
        self._cached: list[CachedModel] = []
        self._limits: dict[str, LimitedModel] = {}
        self._clients: dict[str, HttpPool | LazySession] = {}
        self._fake_counters: dict[str, FakeCounters] = {}

    def provider_config(self, provider: str) -> ProviderConfig:
        """The settings of ``provider``: its ``providers:`` entry over the built-in preset, if any
        (:mod:`ragreplay.providers.presets`: openai, anthropic, azure, ollama, vllm, llamacpp, lmstudio,
        litellm, fake)."""
        cfg = resolve(provider, self.settings.providers.get(provider), self.env)
        if cfg is None:
            known = sorted({*PRESETS, *self.settings.providers})
            raise ConfigError(
                f"unknown model provider {provider!r}. Fix: use one of {', '.join(known)}, or declare "
                f"it under 'providers: {provider}:' (kind, base_url, api_key_env) in the config file"
            )
        return cfg

    def build(self, spec: str) -> ChatModel:
        """The model stack for ``spec``; the same spec always gets the same instance."""
        provider, model = parse_spec(spec)
        name = f"{provider}:{model}"
        if name in self._models:
            return self._models[name]
        cfg = self.provider_config(provider)
        if cfg.kind != "fake" and self.env.get(BLOCK_ENV, "").strip().lower() in ("1", "true", "yes"):
            raise ConfigError(
                f"real model calls are blocked in tests ({BLOCK_ENV}=1), so {name!r} cannot be built. "
                "Fix: use a fake: model, or a loopback mock server with an explicit env"
            )
        raw = self._fake(provider, name) if cfg.kind == "fake" else self._real(provider, model, name, cfg)
        limited = self._limited(provider, cfg, raw)
        built: ChatModel = limited
        if self.cache is not None:
            cached = CachedModel(limited, self.cache, self.settings.cache_mode)
            self._cached.append(cached)
            built = cached
        self._models[name] = built
        return built

    def cache_counts(self) -> dict[str, int]:
        """Cache hits and misses summed over every model built so far."""
        return {
            "hits": sum(c.hits for c in self._cached),
            "misses": sum(c.misses for c in self._cached),
        }

    def _limited(self, provider: str, cfg: ProviderConfig, raw: ChatModel) -> LimitedModel:
        first = self._limits.get(provider)
        if first is not None:
            return first.sharing(raw)
        retry = RetryPolicy(max_retries=cfg.max_retries, budget_s=cfg.retry_budget_s)
        shared = None
        rpm = cfg.requests_per_minute
        if self.shared_rate is not None and rpm:
            shared = partial(self.shared_rate.acquire, provider, rpm)
        limited = LimitedModel(raw, cfg.max_concurrency, rpm, retry, sleep=self._sleep, shared=shared)
        self._limits[provider] = limited
        return limited

    def _real(self, provider: str, model: str, name: str, cfg: ProviderConfig) -> ChatModel:
        api_key = self._api_key(provider, cfg)
        price = lookup_price(name, self.prices)
        if price is None and name not in self.unpriced:
            self.unpriced.add(name)
            log.warning(
                "no price known for %s: its cost is shown as price unknown. Fix: add it under 'prices:'", name
            )
        if cfg.kind == "litellm":
            litellm = import_litellm(name)
            return LiteLLMModel(
                name,
                model,
                litellm,
                base_url=cfg.base_url,
                api_key=api_key,
                timeout_s=cfg.timeout_s,
                max_tokens=cfg.max_tokens,
                price=price,
            )
        base_url = self._base_url(provider, cfg)
        client = self._clients.get(provider)
        if client is None:
            client = http_client(cfg.timeout_s, cfg.max_concurrency, self.env)
            self._clients[provider] = client
        if cfg.kind == "anthropic":
            return AnthropicModel(
                name,
                base_url,
                model,
                api_key,
                client,
                max_tokens=cfg.max_tokens or ANTHROPIC_MAX_TOKENS,
                headers=cfg.headers,
                timeout_s=cfg.timeout_s,
                api_key_env=cfg.api_key_env,
                price=price,
            )
        query: dict[str, str] | None = None
        if cfg.kind == "azure":
            base_url, query = azure_deployment_url(base_url, model, cfg.api_version)
        return OpenAICompatModel(
            name,
            base_url,
            model,
            api_key=api_key,
            headers=cfg.headers,
            timeout_s=cfg.timeout_s,
            client=client,
            api_key_header=cfg.api_key_header,
            api_key_env=cfg.api_key_env,
            price=price,
            query=query,
        )

    def _base_url(self, provider: str, cfg: ProviderConfig) -> str:
        if cfg.base_url:
            return cfg.base_url
        if cfg.kind == "azure":
            raise ConfigError(
                f"provider {provider!r} has no endpoint. Fix: export AZURE_OPENAI_ENDPOINT="
                f"https://<resource>.openai.azure.com, or set providers.{provider}.base_url"
            )
        raise ConfigError(
            f"provider {provider!r} has no base_url. "
            f"Fix: set providers.{provider}.base_url, e.g. http://localhost:8000/v1"
        )

    def _api_key(self, provider: str, cfg: ProviderConfig) -> str | None:
        if not cfg.api_key_env:
            return None
        api_key = self.env.get(cfg.api_key_env)
        if not api_key and not cfg.api_key_optional:
            raise ConfigError(
                f"provider {provider!r} needs an API key in the environment variable {cfg.api_key_env}, "
                f"which is not set. Fix: export {cfg.api_key_env}=<your key>"
            )
        return api_key or None

    def _fake(self, provider: str, name: str) -> FakeChatModel:
        counters = self._fake_counters.setdefault(provider, FakeCounters())
        call_log = self.env.get(FAKE_ENV["call_log"])
        hang_after = self._env_number("hang_after", int)
        return FakeChatModel(
            name,
            latency_ms=self._env_number("latency_ms", float) or 0.0,
            call_log=Path(call_log) if call_log else None,
            hang_after=int(hang_after) if hang_after is not None else None,
            fail_first=int(self._env_number("fail_first", int) or 0),
            counters=counters,
        )

    def _env_number(self, option: str, kind: type[int] | type[float]) -> float | None:
        var = FAKE_ENV[option]
        raw = self.env.get(var)
        if raw is None or raw.strip() == "":
            return None
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(
                f"environment variable {var}={raw!r} is not a{'n integer' if kind is int else ' number'}. "
                "Fix: set it to e.g. 10, or unset it"
            ) from None
        if value < 0:
            raise ConfigError(f"environment variable {var}={raw!r} is negative. Fix: use 0 or more")
        return value

    async def aclose(self) -> None:
        """Close every HTTP session this factory opened (a later request opens a new one)."""
        for client in self._clients.values():
            await client.aclose()
