"""Any :class:`~ragreplay.ports.Target` as a small JSON-over-HTTP RAG app (an ASGI app, no framework).

``POST <any path>`` with ``{"question": "...", "tags": {...}, "user_id": "..."}`` answers
``{"id": "...", "answer": "...", "contexts": [{"id": ...}, ...], "latency_ms": ...}``; the feedback path (if
any) takes ``{"request_id": ..., "feedback": ...}`` and answers 204, like a production app's thumbs endpoint.
The shadow demo serves the shipped champion and challenger this way; it also puts a Python target behind
``ragreplay shadow serve``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from ragreplay.asgi import Receive, Scope, Send, read_json_object, run_lifespan, send_json
from ragreplay.core.shadow import live_case
from ragreplay.ports import Target


class TargetApp:
    """The ASGI app; ``feedback`` (optional) is called with each accepted feedback body."""

    def __init__(
        self,
        target: Target,
        feedback_path: str | None = "/feedback",
        feedback: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.target = target
        self.feedback_path = feedback_path
        self.on_feedback = feedback
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await send_json(send, 405, {"error": "POST a JSON body"})
            return
        try:
            data = await read_json_object(receive)
        except ValueError as exc:
            await send_json(send, 400, {"error": f"bad JSON: {exc}"})
            return
        if scope["path"] == self.feedback_path:
            if data.get("request_id") is None or data.get("feedback") is None:
                await send_json(send, 422, {"error": "request_id and feedback are required"})
                return
            if self.on_feedback is not None:
                self.on_feedback(data)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await self._answer(data, send)

    async def _answer(self, data: dict[str, Any], send: Send) -> None:
        question = data.get("question")
        if not isinstance(question, str) or not question.strip():
            await send_json(send, 400, {"error": "field 'question' is missing or empty"})
            return
        tags = data.get("tags") if isinstance(data.get("tags"), dict) else None
        user = data.get("user_id")
        request_id = uuid.uuid4().hex
        case = live_case(request_id, question, str(user) if user is not None else None, tags)
        start = time.perf_counter()
        try:
            answer = await self.target.answer(question, case)
        except Exception as exc:
            await send_json(send, 500, {"error": f"{type(exc).__name__}: {exc}"})
            return
        if answer.error is not None:
            await send_json(send, 502, {"error": answer.error})
            return
        self.answered += 1
        await send_json(
            send,
            200,
            {
                "id": request_id,
                "answer": answer.text,
                "contexts": [{"id": chunk.id} for chunk in answer.contexts],
                "latency_ms": round((time.perf_counter() - start) * 1000, 3),
            },
        )
