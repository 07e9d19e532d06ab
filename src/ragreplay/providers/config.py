"""Settings of the model-call layer as they appear in the config file (secrets only come from the env)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.providers.cache import CacheMode
from ragreplay.providers.pricing import Price


class ProviderConfig(BaseModel):
    """One model provider: where it lives, how to authenticate and how hard it may be pushed.

    ``kind="openai"`` covers every OpenAI-compatible endpoint (OpenAI, Azure v1 with
    ``api_key_header: api-key``, vLLM, Ollama, llama.cpp, LM Studio); ``azure`` is Azure OpenAI's deployments
    API, ``anthropic`` the Anthropic messages API and ``litellm`` any model LiteLLM reaches (the ``[litellm]``
    extra). ``api_key_env`` names the environment variable holding the key; leave it out for local servers
    that need none. The built-in providers (``providers/presets.py``) fill in what is not set here.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["openai", "azure", "anthropic", "litellm", "fake"] = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    api_key_optional: bool = Field(
        default=False,
        description="Send the key when api_key_env is set in the environment, none otherwise (local servers).",
    )
    api_key_header: str = Field(
        default="Authorization",
        description='Header carrying the key: "Authorization" (Bearer) or "api-key" for Azure.',
    )
    headers: dict[str, str] = Field(default_factory=dict)
    api_version: str | None = Field(
        default=None, description="Azure OpenAI's api-version query parameter (kind azure)."
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Reply token cap sent when a request sets none; Anthropic requires one (4096 unless set).",
    )
    max_concurrency: int = Field(default=8, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(
        default=5,
        ge=0,
        description="Retries of a failed call (5xx, timeouts); 429s are waited out, not counted.",
    )
    retry_budget_s: float = Field(
        default=300.0,
        gt=0,
        description="Give up on 429s once the endpoint has answered nothing else for this long; "
        "the cases that gave up are retried by a re-run.",
    )


class ModelSettings(BaseModel):
    """Providers, price overrides (USD per million tokens, by ``provider:model`` or model) and cache mode."""

    model_config = ConfigDict(extra="forbid")

    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    cache_mode: CacheMode = "read-write"
