"""Produce tests/fixtures/real/langfuse/sdk-v2-openai-feedback.batches.jsonl: what the Langfuse Python SDK sends.

A small RAG chat (a retriever span and an OpenAI chat completion per turn, three turns in one session) is traced
with the Langfuse Python SDK v2 (``@observe`` and its OpenAI drop-in ``langfuse.openai``) and the user's
thumbs are recorded with the SDK's own ``langfuse.score(...)`` calls (``user_feedback``: 1 = up, 0 = down; an
LLM judge's ``hallucination`` score too, which is no user feedback). The OpenAI API is a mock on 127.0.0.1 and
Langfuse's ingestion endpoint (``POST /api/public/ingestion``) a loopback server that saves every request
body as the SDK sent it; the file holds those bodies, one a line, in the order they arrived (the only
conversion: request bodies written one after another). Nothing leaves the machine.

Not run in CI. Needs, in a venv of its own: ``langfuse==2.60.10`` and ``openai==1.109.1`` (the versions the
committed file was made with). Run: ``python scripts/real_fixtures/langfuse_sdk_feedback.py OUT.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BODIES: list[bytes] = []
ANSWERS = {
    "How many vacation days do I get?": "Full-time employees get 25 vacation days a year.",
    "Can I carry unused days over?": "Yes, up to 5 unused days carry over to the next year.",
    "Who approves my leave?": "Your line manager approves leave requests in the HR portal.",
}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the servers' requests are not printed."""

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        """Langfuse ingestion (saved) or an OpenAI chat completion (answered from :data:`ANSWERS`)."""
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/api/public/ingestion"):
            BODIES.append(body)
            events = json.loads(body)["batch"]
            self._reply(207, {"successes": [{"id": e["id"], "status": 201} for e in events], "errors": []})
        elif self.path.endswith("/chat/completions"):
            request = json.loads(body)
            question = request["messages"][-1]["content"].rsplit("Question: ", 1)[-1]
            self._reply(200, _completion(ANSWERS.get(question, "I don't know."), request["model"]))
        else:
            self._reply(404, {"message": "not found"})


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{abs(hash(text)) % 10**8}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 52, "completion_tokens": len(text.split()), "total_tokens": 52},
    }


def main(out: Path) -> None:
    """Run the chat under the SDK against the loopback servers and write the captured ingestion bodies."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ.update(
        LANGFUSE_HOST=base,
        LANGFUSE_PUBLIC_KEY="pk-lf-loopback",
        LANGFUSE_SECRET_KEY="sk-lf-loopback",
        OPENAI_API_KEY="sk-loopback",
        OPENAI_BASE_URL=base + "/v1",
    )
    from langfuse import Langfuse
    from langfuse.decorators import langfuse_context, observe
    from langfuse.openai import OpenAI

    client = OpenAI()

    def retrieve(question: str) -> list[dict[str, Any]]:
        topic = "carry-over" if "carry" in question else "leave"
        return [
            {"id": f"hr-handbook#{topic}-1", "score": 0.82, "content": f"Handbook section on {topic}."},
            {"id": f"hr-handbook#{topic}-2", "score": 0.64, "content": f"More on {topic}."},
        ]

    traced_retrieve = observe(name="retriever")(retrieve)  # as @observe(...) would: mypy sees no types here
    trace_ids: list[str] = []

    def answer(question: str, session_id: str) -> str:
        langfuse_context.update_current_trace(session_id=session_id, user_id="u-1042", tags=["hr"])
        trace_ids.append(langfuse_context.get_current_trace_id() or "")
        docs = traced_retrieve(question)
        context = "\n".join(d["content"] for d in docs)
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "Answer from the HR handbook."},
                {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
            ],
        )
        return reply.choices[0].message.content or ""

    traced_answer = observe(name="hr-assistant")(answer)
    for question in ANSWERS:
        traced_answer(question, session_id="hr-session-7")
        time.sleep(0.05)
    langfuse_context.flush()

    langfuse = Langfuse()
    # the user's thumbs, as an app's feedback widget records them with the SDK
    langfuse.score(trace_id=trace_ids[0], name="user_feedback", value=1, comment="clear")
    langfuse.score(trace_id=trace_ids[1], name="user_feedback", value=0, comment="wrong number")
    langfuse.score(trace_id=trace_ids[1], name="hallucination", value=0.9, comment="LLM judge")
    langfuse.flush()
    server.shutdown()
    out.write_bytes(b"".join(body.rstrip(b"\n") + b"\n" for body in BODIES))
    print(f"{out}: {len(BODIES)} ingestion request(s), traces {trace_ids}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
