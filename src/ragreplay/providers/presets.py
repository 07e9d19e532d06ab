"""The built-in model providers: ``openai``, ``anthropic``, ``azure``, the local servers and ``litellm``.

A spec such as ``ollama:llama3.1`` needs no config: the preset says where the server listens by default, which
environment variables move it and which hold a key. A ``providers: NAME:`` entry in the config file overrides
any field it sets, the rest still comes from the preset. The base URL is, first found: the config file's
``base_url``, the preset's environment variables (a bare ``host:port`` gets ``http://`` and the preset's path,
as Ollama's ``OLLAMA_HOST`` is written), the preset's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from ragreplay.providers.config import ProviderConfig

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where ``openai:`` models are sent unless ``OPENAI_BASE_URL`` or the config file says otherwise."""
ANTHROPIC_MAX_TOKENS = 4096
"""The reply cap sent to Anthropic when neither the request nor ``providers.anthropic.max_tokens`` sets one."""
AZURE_API_VERSION = "2024-10-21"
"""Azure OpenAI's api-version used when neither the config nor the environment names one."""
AZURE_API_VERSION_ENV = ("AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION")


@dataclass(frozen=True)
class Preset:
    """A built-in provider: its settings and the environment variables that move its base URL (first set
    wins)."""

    config: ProviderConfig
    base_url_env: tuple[str, ...] = ()


def _local(port: int, *base_url_env: str, api_key_env: str | None = None) -> Preset:
    config = ProviderConfig(
        base_url=f"http://localhost:{port}/v1", api_key_env=api_key_env, api_key_optional=True
    )
    return Preset(config, base_url_env)


PRESETS: dict[str, Preset] = {
    "openai": Preset(
        ProviderConfig(base_url=OPENAI_DEFAULT_BASE_URL, api_key_env="OPENAI_API_KEY"), ("OPENAI_BASE_URL",)
    ),
    "anthropic": Preset(
        ProviderConfig(
            kind="anthropic",
            base_url="https://api.anthropic.com",
            api_key_env="ANTHROPIC_API_KEY",
            api_key_header="x-api-key",
        ),
        ("ANTHROPIC_BASE_URL",),
    ),
    "azure": Preset(
        ProviderConfig(kind="azure", api_key_env="AZURE_OPENAI_API_KEY", api_key_header="api-key"),
        ("AZURE_OPENAI_ENDPOINT",),
    ),
    "ollama": _local(11434, "OLLAMA_BASE_URL", "OLLAMA_HOST"),
    "vllm": _local(8000, "VLLM_BASE_URL", api_key_env="VLLM_API_KEY"),
    "llamacpp": _local(8080, "LLAMACPP_BASE_URL", api_key_env="LLAMA_API_KEY"),
    "lmstudio": _local(1234, "LMSTUDIO_BASE_URL"),
    "litellm": Preset(ProviderConfig(kind="litellm")),
    "fake": Preset(ProviderConfig(kind="fake")),
}
"""Every provider a spec may name without a ``providers:`` entry."""


def _with_default_path(url: str, default: str | None) -> str:
    """``url`` with ``http://`` when it has no scheme, the default URL's path when it has none, and a wildcard
    bind address (``0.0.0.0``, as servers are told to listen) replaced by the loopback one."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    netloc = parts.netloc.replace("0.0.0.0", "127.0.0.1")  # the address a server binds, not ours
    path = parts.path
    if path in ("", "/") and default is not None:
        path = urlsplit(default).path
    return urlunsplit((parts.scheme, netloc, path, parts.query, ""))


def resolve(provider: str, declared: ProviderConfig | None, env: Mapping[str, str]) -> ProviderConfig | None:
    """The settings of ``provider``: the preset's, overridden by the fields ``declared`` (the config file's
    entry) sets, with the base URL from the environment where the file sets none; ``None`` when the provider
    is neither declared nor built in."""
    preset = PRESETS.get(provider)
    if preset is None:
        return declared
    config = preset.config
    if declared is not None:
        config = config.model_copy(update={f: getattr(declared, f) for f in declared.model_fields_set})
    if declared is None or "base_url" not in declared.model_fields_set:
        from_env = next((env[var] for var in preset.base_url_env if env.get(var, "").strip()), None)
        if from_env is not None:
            config = config.model_copy(update={"base_url": _with_default_path(from_env, config.base_url)})
    if config.kind == "azure" and config.api_version is None:
        version = next((env[var] for var in AZURE_API_VERSION_ENV if env.get(var, "").strip()), None)
        config = config.model_copy(update={"api_version": (version or AZURE_API_VERSION).strip()})
    return config


def azure_deployment_url(
    endpoint: str, deployment: str, api_version: str | None
) -> tuple[str, dict[str, str]]:
    """The base URL and query of an Azure OpenAI deployment: ``{endpoint}/openai/deployments/{deployment}`` with
    ``api-version``; an endpoint ending in ``/openai/v1`` (Azure's v1 API) is used as it is, with no query."""
    base = endpoint.rstrip("/")
    if base.endswith("/openai/v1"):
        return base, {}
    base = base.removesuffix("/openai")
    return f"{base}/openai/deployments/{quote(deployment, safe='')}", {
        "api-version": api_version or AZURE_API_VERSION
    }
