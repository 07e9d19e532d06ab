"""A content-addressed response cache in front of any chat model.

The key is the SHA-256 of the canonical JSON of the model's name and the request's cache payload
(messages, semantic parameters, prompt version). Responses are stored as JSON, never pickled. A hit costs
nothing: it comes back with ``cached=True``, ``cost_usd=0`` and ``unpriced_calls=0`` (a hit is free) while
keeping the original token usage, so reports can show what the cache saved.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Literal, get_args

from pydantic import ValidationError

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.ids import CanonicalDict, canonical_json
from ragreplay.ports import CacheBackend, ChatModel

CacheMode = Literal["read-write", "read-only", "off"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)

log = logging.getLogger(__name__)


def cache_key(model_name: str, request: ChatRequest) -> str:
    """Hex SHA-256 identifying ``request`` sent to ``model_name`` (hints and task are not part of it)."""
    return _key(model_name, request.canonical_cache_payload())


def _key(model_name: str, payload: CanonicalDict) -> str:
    # The canonical JSON of {"model": model_name, "request": payload} (its keys sorted), with the payload's
    # text made once: the same text is stored with the entry.
    text = f'{{"model":{canonical_json(model_name)},"request":{payload.canonical}}}'
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _as_hit(response: ChatResponse) -> ChatResponse:
    return response.model_copy(
        update={"cached": True, "cost_usd": 0.0, "unpriced_calls": 0, "latency_ms": 0.0}
    )


class CachedModel:
    """Wraps a :class:`~ragreplay.ports.ChatModel` with a response cache.

    Modes: ``read-write`` (serve hits, store misses), ``read-only`` (serve hits, never store), ``off``
    (always call the model; counters stay at 0). Concurrent identical requests share one inner call; the
    followers count as hits. ``hits`` and ``misses`` count requests served from the cache and inner calls.
    """

    def __init__(self, inner: ChatModel, backend: CacheBackend, mode: CacheMode = "read-write") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, not {mode!r}")
        self.inner = inner
        self.backend = backend
        self.mode: CacheMode = mode
        self.hits = 0
        self.misses = 0
        self._inflight: dict[str, asyncio.Future[ChatResponse]] = {}

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    def _lookup(self, key: str) -> ChatResponse | None:
        stored = self.backend.cache_get(key)
        if stored is None:
            return None
        try:
            return ChatResponse.model_validate(dict(stored))
        except ValidationError:
            log.warning("ignoring unreadable cache entry %s for %s", key[:12], self.name)
            return None

    def _store(self, key: str, payload: CanonicalDict, response: ChatResponse) -> None:
        try:
            self.backend.cache_put(key, self.name, payload, response.model_dump(mode="json"))
        except Exception:
            # The answer is good and paid for; failing the call would only make the caller pay again.
            log.warning("could not store a cache entry for %s", self.name, exc_info=True)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A cached response when there is one, else the wrapped model's (stored in read-write mode)."""
        if self.mode == "off":
            return await self.inner.complete(request)
        payload = request.canonical_cache_payload()
        key = _key(self.name, payload)
        while True:
            hit = self._lookup(key)
            if hit is not None:
                self.hits += 1
                return _as_hit(hit)
            pending = self._inflight.get(key)
            if pending is None:
                break
            try:
                shared = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if pending.cancelled():
                    continue  # the leader was cancelled, not us: look again, maybe lead
                raise
            self.hits += 1
            return _as_hit(shared)
        return await self._lead(key, payload, request)

    async def _lead(self, key: str, payload: CanonicalDict, request: ChatRequest) -> ChatResponse:
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        self.misses += 1
        try:
            response = await self.inner.complete(request)
            if self.mode == "read-write":
                self._store(key, payload, response)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            # Marked retrieved at once (no done callback to schedule): an error nobody else awaited is not
            # reported as "never retrieved"; followers awaiting it still get it.
            future.exception()
            raise
        else:
            future.set_result(response)
            return response
        finally:
            del self._inflight[key]

    async def aclose(self) -> None:
        """Close the wrapped model if it can be closed."""
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()
