"""A chat model reached through LiteLLM (``litellm:<model>``), for providers ragreplay has no adapter of.

LiteLLM is the optional ``[litellm]`` extra, imported on the first model built. Its own retries are off
(``num_retries=0``): the limits layer above retries and paces it like every provider. Its errors are classified
by their status code (408, 409, 429 and 5xx transient, with the reply's ``Retry-After``; others permanent).
The model cost map LiteLLM would download on import is read from its bundled copy instead
(``LITELLM_LOCAL_MODEL_COST_MAP=True`` unless set), so building a model makes no network call.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.retry import retry_after_seconds
from ragreplay.core.types import TokenUsage
from ragreplay.errors import import_extra
from ragreplay.providers.json_endpoint import TRANSIENT_STATUSES
from ragreplay.providers.pricing import Price


def import_litellm(spec: str) -> ModuleType:
    """The ``litellm`` module, or a one-line error naming ``spec`` and ``pip install 'ragreplay[litellm]'``."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    module = import_extra("litellm", f"the model {spec!r}")
    setattr(module, "suppress_debug_info", True)  # noqa: B010 - a module attribute mypy does not know
    return module


def _status_of(exc: Exception) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


class LiteLLMModel:
    """A :class:`~ragreplay.ports.ChatModel` calling ``litellm.acompletion``.

    ``base_url`` and ``api_key`` are passed as LiteLLM's ``api_base`` and ``api_key`` when given (otherwise
    LiteLLM reads its provider's usual environment variables). ``extra`` is passed on as is (tests use
    ``mock_response``). ``price`` sets ``ChatResponse.cost_usd`` (0 and ``unpriced_calls`` 1
    when ``None``: the price is unknown).
    """

    def __init__(
        self,
        name: str,
        model: str,
        litellm: ModuleType,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_tokens: int | None = None,
        price: Price | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.price = price
        self._litellm = litellm
        self._options: dict[str, Any] = {"timeout": timeout_s, "num_retries": 0, **(extra or {})}
        if base_url:
            self._options["api_base"] = base_url
        if api_key:
            self._options["api_key"] = api_key
        self._max_tokens = max_tokens

    @property
    def name(self) -> str:
        """``litellm:<model>``."""
        return self._name

    def request_options(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for ``request`` (hints and task never sent)."""
        options: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            **self._options,
        }
        max_tokens = request.max_tokens or self._max_tokens
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        schema = request.response_format
        if schema is not None:
            options["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.json_schema, "strict": True},
            }
        elif request.json_mode:
            options["response_format"] = {"type": "json_object"}
        return options

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One completion through LiteLLM; raises :class:`ProviderError` classified as transient or not."""
        try:
            reply = await self._litellm.acompletion(**self.request_options(request))
        except Exception as exc:  # LiteLLM's errors share no base class worth naming: classify by status
            raise self._error(exc) from exc
        try:
            content = reply.choices[0].message.content
            usage_raw = getattr(reply, "usage", None)
        except (AttributeError, IndexError, TypeError) as exc:
            raise ProviderError(f"{self.name}: LiteLLM returned no choice ({exc})", transient=False) from exc
        if not isinstance(content, str):
            raise ProviderError(f"{self.name}: the reply has no text content", transient=False)
        usage = TokenUsage(
            input=int(getattr(usage_raw, "prompt_tokens", 0) or 0),
            output=int(getattr(usage_raw, "completion_tokens", 0) or 0),
        )
        latency = getattr(reply, "_response_ms", None)
        return ChatResponse(
            text=content,
            model=str(getattr(reply, "model", None) or self.model),
            usage=usage,
            cost_usd=self.price.cost(usage) if self.price is not None else 0.0,
            unpriced_calls=int(self.price is None),
            latency_ms=float(latency) if isinstance(latency, int | float) else 0.0,
        )

    def _error(self, exc: Exception) -> ProviderError:
        status = _status_of(exc)
        message = f"{self.name}: {type(exc).__name__}: {str(exc)[:300]}"
        timed_out = isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower()
        if timed_out or (status is None and "connection" in type(exc).__name__.lower()):
            return ProviderError(message, transient=True, status=status)
        if status is not None and (status in TRANSIENT_STATUSES or status >= 500):
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None) or {}
            retry_after = retry_after_seconds(dict(headers), datetime.now(UTC)) if headers else None
            return ProviderError(message, transient=True, status=status, retry_after=retry_after)
        fix = "check the model name (LiteLLM's 'vendor/model') and the vendor's key in the environment"
        return ProviderError(f"{message}. Fix: {fix}", transient=False, status=status)

    async def aclose(self) -> None:
        """Nothing to close: LiteLLM keeps its own clients."""
