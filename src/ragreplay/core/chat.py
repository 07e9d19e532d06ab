"""The tiny provider contract: a chat request in, a chat response out."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.rate_limits import RateLimitInfo
from ragreplay.core.types import TokenUsage


class ChatMessage(BaseModel):
    """One message sent to a chat model."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class ResponseFormat(BaseModel):
    """The JSON schema a reply must follow (structured output), under a short ``name`` for the endpoint."""

    model_config = ConfigDict(frozen=True)

    name: str
    json_schema: dict[str, Any]


class ChatRequest(BaseModel):
    """A chat completion request.

    ``messages``, ``temperature``, ``max_tokens``, ``json_mode``, ``response_format`` and ``prompt_version``
    change the answer and are part of the cache key. ``response_format`` asks for a reply that follows a JSON
    schema where the endpoint supports it (it implies JSON mode). ``hints`` is never sent to a real endpoint
    nor hashed: it carries the structured inputs of a task so the shipped fake model can answer
    deterministically.
    """

    model_config = ConfigDict(frozen=True)

    messages: tuple[ChatMessage, ...]
    temperature: float = 0.0
    max_tokens: int | None = None
    json_mode: bool = False
    response_format: ResponseFormat | None = None
    prompt_version: str = ""
    task: str = ""
    hints: dict[str, Any] = Field(default_factory=dict)

    def cache_payload(self) -> dict[str, Any]:
        """The parts of the request that change the answer."""
        payload: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],  # = model_dump()
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "prompt_version": self.prompt_version,
        }
        if self.response_format is not None:  # only then: other requests keep the cache keys they had
            payload["response_format"] = self.response_format.model_dump()
        return payload


class ChatResponse(BaseModel):
    """A chat completion response with its accounting.

    ``rate_limit`` is what the endpoint said of its request limit with this answer; it is never stored (a
    cached answer has none).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    model: str
    usage: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """1 when the model has no known price: ``cost_usd`` 0 is then not its cost (see ``core/costs``)."""
    latency_ms: float = 0.0
    cached: bool = False
    rate_limit: RateLimitInfo | None = Field(default=None, exclude=True)


class ProviderError(Exception):
    """A model call failed. ``transient`` errors (429, 5xx, timeouts, connection drops) may be retried;
    ``retry_after`` and ``rate_limit`` are what the endpoint said of when to try again and of its limit."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        status: int | None = None,
        retry_after: float | None = None,
        rate_limit: RateLimitInfo | None = None,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.status = status
        self.retry_after = retry_after
        self.rate_limit = rate_limit
