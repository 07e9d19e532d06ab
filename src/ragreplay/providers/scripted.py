"""A scripted chat model for tests: it answers what the test told it to, and remembers what it was asked.

Give it a script of replies, consumed in order, one per call::

    model = ScriptedChatModel(['{"verdict": "FIT"}', ProviderError("HTTP 503", transient=True), "ok"])

Each reply is a string (wrapped in a :class:`~ragreplay.core.chat.ChatResponse` carrying the model's
``usage``, ``cost_usd`` and ``latency_ms``), a ready :class:`~ragreplay.core.chat.ChatResponse` (returned as
it is), or an exception instance (raised). A call after the last reply raises :class:`ScriptExhaustedError`.

Or give it a responder, ``(ChatRequest) -> str | ChatResponse``, plain or ``async``, called once per call; what
it raises propagates. An async responder can wait on an event or sleep, to hold calls in flight::

    model = ScriptedChatModel(lambda request: "same reply every time", cost_usd=0.25)

Every call is recorded before it is answered (``requests``, ``calls``), and the calls under way are counted
(``in_flight``, ``peak_in_flight``), so a test can check what a wrapper sent and how many it sent at once.
Unlike :mod:`ragreplay.providers.fake` it never looks at ``request.hints``: it is not a stand-in for a real
model, only a test double.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeAlias

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.types import TokenUsage
from ragreplay.ports import ChatModel

Reply: TypeAlias = str | ChatResponse | BaseException
"""One scripted reply: text to answer with, a whole response, or an exception to raise."""

Responder: TypeAlias = Callable[[ChatRequest], str | ChatResponse | Awaitable[str | ChatResponse]]
"""A function that answers each request, plain or ``async``."""


class ScriptExhaustedError(RuntimeError):
    """A :class:`ScriptedChatModel` was called once more than its script has replies."""


class ScriptedChatModel:
    """A :class:`~ragreplay.ports.ChatModel` that replies from a script or a responder (see the module doc).

    ``script`` is either an iterable of :data:`Reply` (a queue, one per call) or a :data:`Responder`.
    ``name`` is what :attr:`name` reports and the ``model`` of the responses built from text replies, which
    also carry ``usage``, ``cost_usd`` and ``latency_ms`` (reported only: nothing is waited).

    Attributes:
        requests: every request received, in the order the calls started (failed and cancelled ones too).
        in_flight: calls started and not finished yet.
        peak_in_flight: the most calls that were ever in flight at once.
        usage, cost_usd, latency_ms: the accounting of the responses built from text replies; ``cost_usd``
            ``None`` stands for a model with no known price (each response: cost 0, ``unpriced_calls`` 1).
    """

    def __init__(
        self,
        script: Iterable[Reply] | Responder,
        *,
        name: str = "scripted:model",
        usage: TokenUsage | None = None,
        cost_usd: float | None = 0.0,
        latency_ms: float = 0.0,
    ) -> None:
        if isinstance(script, str | ChatResponse | BaseException):
            raise TypeError(f"script must be a list of replies or a callable, not a {type(script).__name__}")
        self._name = name
        self.usage = usage if usage is not None else TokenUsage()
        self.cost_usd = cost_usd
        self.latency_ms = latency_ms
        self.requests: list[ChatRequest] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._responder: Responder | None = script if callable(script) else None
        self._queue: deque[Reply] = deque() if callable(script) else deque(script)
        self._scripted = len(self._queue)

    @property
    def name(self) -> str:
        """The name given at construction (``scripted:model`` by default)."""
        return self._name

    @property
    def calls(self) -> int:
        """How many calls were made (started), answered or not."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        """Scripted replies not consumed yet (always 0 with a responder)."""
        return len(self._queue)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Record ``request``, then answer it with the next scripted reply or the responder's.

        Raises the scripted exception, whatever the responder raises, or :class:`ScriptExhaustedError` when
        the script has no reply left.
        """
        self.requests.append(request)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return self._respond(await self._next(request))
        finally:
            self.in_flight -= 1

    async def _next(self, request: ChatRequest) -> str | ChatResponse:
        if self._responder is not None:
            produced = self._responder(request)
            return await produced if inspect.isawaitable(produced) else produced
        if not self._queue:
            asked = request.messages[-1].content if request.messages else ""
            raise ScriptExhaustedError(
                f"{self._name} got call {self.calls} but was scripted with {self._scripted} "
                f"{'reply' if self._scripted == 1 else 'replies'} (last message: {asked[:80]!r})"
            )
        reply = self._queue.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _respond(self, reply: str | ChatResponse) -> ChatResponse:
        if isinstance(reply, ChatResponse):
            return reply
        return ChatResponse(
            text=reply,
            model=self._name,
            usage=self.usage,
            cost_usd=self.cost_usd or 0.0,
            unpriced_calls=int(self.cost_usd is None),
            latency_ms=self.latency_ms,
        )


_CHECK_PROTOCOL: type[ChatModel] = ScriptedChatModel  # mypy: it is a ChatModel
