"""The tiny provider contract: a chat request in, a chat response out."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.ids import CanonicalDict, canonical_json, json_string
from ragreplay.core.memo import KeyMemo, ObjectMemo
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

    def canonical_cache_payload(self) -> CanonicalDict:
        """:meth:`cache_payload` with its canonical JSON, for a cache key: the same dict and the same text as
        ``CanonicalDict(self.cache_payload())``, made faster. A system message's text and a response format's
        JSON are encoded once per value (a judge sends the same ones with every request), and the parts are
        joined in the canonical (sorted) key order by hand. The payload shares the response format's schema
        dict: it is read, never changed."""
        temperature, max_tokens, fmt = self.temperature, self.max_tokens, self.response_format
        if type(temperature) is not float or not math.isfinite(temperature):
            return CanonicalDict(self.cache_payload())  # NaN and infinities: the encoder's own spelling
        if max_tokens is not None and type(max_tokens) is not int:
            return CanonicalDict(self.cache_payload())
        messages = []
        texts = []
        for m in self.messages:
            role, content = m.role, m.content
            messages.append({"role": role, "content": content})
            text = _system_text(content) if role == "system" else json_string(content)
            texts.append(f'{{"content":{text},"role":{json_string(role)}}}')
        payload: dict[str, Any] = {
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "json_mode": self.json_mode,
            "prompt_version": self.prompt_version,
        }
        fmt_text = ""
        if fmt is not None:
            payload["response_format"] = {"name": fmt.name, "json_schema": fmt.json_schema}
            fmt_text = f',"response_format":{_format_text(fmt)}'
        text = (
            f'{{"json_mode":{"true" if self.json_mode else "false"},'
            f'"max_tokens":{"null" if max_tokens is None else int.__repr__(max_tokens)},'
            f'"messages":[{",".join(texts)}],"prompt_version":{json_string(self.prompt_version)}'
            f'{fmt_text},"temperature":{float.__repr__(temperature)}}}'
        )
        return CanonicalDict.with_text(payload, text)


def _canonical_format(fmt: ResponseFormat) -> str:
    return canonical_json(fmt.model_dump())


_system_text = KeyMemo(json_string)
"""The JSON string of a system message's text, encoded once per distinct text."""
_format_text = ObjectMemo(_canonical_format)
"""The canonical JSON of ``fmt.model_dump()``, encoded once per format object (formats are frozen)."""


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
