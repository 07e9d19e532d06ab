"""One model endpoint's URL and fixed headers, POSTed JSON through a provider's shared HTTP client.

Shared by every HTTP model adapter (OpenAI-compatible, Anthropic): the transport failures they turn into
:class:`ProviderError` (timeouts, refused or dropped connections as transient; a reply over the cap as not), and
the classification of an error status: 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" included) are
transient and carry what the server said of when to try again (``Retry-After``) and of its limit; a 429 for an
exhausted quota and every other status are not, and say what to fix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ragreplay.core.chat import ProviderError
from ragreplay.core.rate_limits import read_rate_limit
from ragreplay.core.retry import retry_after_seconds
from ragreplay.providers.http11 import HttpConnectionError, HttpReply, ReplyTooLargeError
from ragreplay.providers.http11_pool import HttpPool, PostTarget

if TYPE_CHECKING:
    import aiohttp

    from ragreplay.providers.aiohttp_session import LazySession

TRANSIENT_STATUSES = frozenset({408, 409, 429})
"""Statuses below 500 worth another try (every 5xx is too)."""
DETAIL_LIMIT = 300
"""Characters of an endpoint's error message quoted in an error."""


def body_text(body: bytes, limit: int) -> str:
    """The first ``limit`` characters of ``body`` as text (undecodable bytes replaced)."""
    return body[: limit * 4].decode("utf-8", errors="replace")[:limit]


def error_detail(body: bytes) -> str:
    """The endpoint's own error message if it sent one (``{"error": {"message"}}`` or ``{"error": "..."}``),
    else the start of the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body_text(body, DETAIL_LIMIT).strip()
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:DETAIL_LIMIT]
        if isinstance(err, str):
            return err[:DETAIL_LIMIT]
    return json.dumps(data)[:DETAIL_LIMIT]


def quota_exhausted(body: bytes) -> bool:
    """Whether a 429 says the key's quota is spent (OpenAI's ``insufficient_quota``) rather than its rate."""
    try:
        err = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(err, dict) and "insufficient_quota" in (err.get("code"), err.get("type"))


class JsonEndpoint:
    """POSTs JSON bodies to ``url`` with ``headers`` through ``client`` (an :class:`HttpPool`, a
    :class:`LazySession` or an open aiohttp session), each within ``timeout_s``; ``name`` (``provider:model``)
    starts every error message."""

    def __init__(
        self,
        name: str,
        url: str,
        headers: Mapping[str, str],
        timeout_s: float,
        client: HttpPool | LazySession | aiohttp.ClientSession,
    ) -> None:
        self.name = name
        self.url = url
        self.headers = dict(headers)
        self.timeout_s = timeout_s
        self.client = client
        self._target: PostTarget | None = None  # the request's fixed part, made on the first call
        self._aiohttp_timeout: aiohttp.ClientTimeout | None = None

    async def post(self, data: bytes) -> tuple[HttpReply, float]:
        """The reply to ``data`` and its latency in ms; transport failures raise :class:`ProviderError`."""
        client = self.client
        started = time.perf_counter()
        try:
            if isinstance(client, HttpPool):
                reply = await client.post(self._target or self._post_target(), data, self.timeout_s)
            else:
                reply = await self._aiohttp_post(client, data)
        except TimeoutError as exc:  # aiohttp's own timeout errors subclass it too
            raise ProviderError(
                f"{self.name}: no answer from {self.url} within {self.timeout_s:g} s ({type(exc).__name__})",
                transient=True,
            ) from exc
        except HttpConnectionError as exc:
            raise ProviderError(
                f"{self.name}: connection to {self.url} failed ({exc}). "
                "Fix: check that the server is running and base_url is right",
                transient=True,
            ) from exc
        except ReplyTooLargeError as exc:
            raise ProviderError(
                f"{self.name}: {self.url} sent {exc}, more than a chat reply can be. "
                "Fix: check that base_url points at the provider's API",
                transient=False,
                status=exc.status,
            ) from exc
        return reply, (time.perf_counter() - started) * 1000.0

    def status_error(
        self, status: int, headers: Mapping[str, str], body: bytes, fixes: Mapping[int, str]
    ) -> ProviderError:
        """The error for an error ``status``: transient (with ``Retry-After`` and the rate limit) or not, with
        the fix ``fixes`` gives for that status."""
        prefix = f"{self.name}: HTTP {status} from {self.url}: {error_detail(body)}"
        if status == 429 and quota_exhausted(body):
            fix = "add credit or raise the quota of the key in the provider's console"
            return ProviderError(f"{prefix}. Fix: {fix}", transient=False, status=status)
        if status in TRANSIENT_STATUSES or status >= 500:
            return ProviderError(
                prefix,
                transient=True,
                status=status,
                retry_after=retry_after_seconds(headers, datetime.now(UTC)),
                rate_limit=read_rate_limit(headers),
            )
        fix = fixes.get(status, "check the provider settings")
        return ProviderError(f"{prefix}. Fix: {fix}", transient=False, status=status)

    def _post_target(self) -> PostTarget:
        try:
            self._target = PostTarget(self.url, self.headers)
        except ValueError as exc:
            raise ProviderError(
                f"{self.name}: cannot send to {self.url}: {exc}. Fix: set base_url to http(s)://host[:port]/... "
                "and give header values on one line",
                transient=False,
            ) from exc
        return self._target

    async def _aiohttp_post(self, client: LazySession | aiohttp.ClientSession, data: bytes) -> HttpReply:
        from ragreplay.providers.aiohttp_session import aiohttp_post, client_timeout

        if self._aiohttp_timeout is None:
            self._aiohttp_timeout = client_timeout(self.timeout_s)
        return await aiohttp_post(client, self.url, data, self.headers, self._aiohttp_timeout)
