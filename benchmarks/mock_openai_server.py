"""A tiny OpenAI-compatible chat server with a fixed latency, for benchmarks and integration tests.

``POST /v1/chat/completions`` answers ``--latency-ms`` after the request arrived (its own work of reading the
request and making the reply inside that time, not added to it) with a deterministic reply: a FIT verdict when
the prompt mentions "verdict", a standalone rewrite when it mentions "standalone", otherwise a short answer.
``GET /stats`` counts requests; ``POST /reset`` zeroes the counters. The first ``--fail-first`` requests can
be answered with 429 (with ``Retry-After``) or 500, and ``--api-key`` makes every other key a 401.

``--rate-limit R`` limits requests as a token bucket (``R`` a second, ``--burst`` tokens, default ``R``: one
second's worth), the way OpenAI enforces a per-minute limit in shorter periods: a request over it is a 429 with
``retry-after-ms`` (when the next token comes) and ``Retry-After`` (whole seconds, rounded up). Every answer
carries ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests`` and ``x-ratelimit-reset-requests``
(time until the bucket is full again, as ``350ms``) unless ``--no-ratelimit-headers``. ``--error-rate P``
answers that share of the admitted requests with a 500, at random (``--seed``).

``POST /v1/embeddings`` answers with deterministic vectors (64 dimensions, words hashed into buckets, unit
length; ``encoding_format: base64`` as the OpenAI client asks by default), under the same limit, 500s and
latency. RAGAS's prompts (``benchmarks/ragas_run.py``) get canned replies of the JSON shape each expects,
recognised by the instruction's words and built from the prompt's ``input:`` JSON: statements split from the
answer at sentence ends, every statement faithful (verdict 1), every answer statement a true positive.
DeepEval's (``benchmarks/deepeval_run.py``: ``FaithfulnessMetric``, ``GEval``) likewise: truths and claims the
sentences of the text or AI output, a ``yes`` verdict per listed claim, a reason, three G-Eval steps and a
score of 10 (no logprobs, so DeepEval keeps the raw score).
ragreplay's claims check (``ragreplay eval``, ``metrics/llm.py``) gets a ``ClaimsReply`` built from its fenced
blocks: every sentence of the answer and of the reference a claim, each supported and covered, every numbered
context relevant, answer relevance 5.
``/stats`` also counts, per client (the ``User-Agent`` up to its first ``/``), the requests answered, the
words they sent (prompt or embedding input, split on whitespace), the words of the replies
(``completion_words``) and the requests by prompt kind.

Run it:  python benchmarks/mock_openai_server.py --port 8000 --latency-ms 100
From Python:  base_url, stop = run_in_thread(port=0, latency_ms=20); ...; stop()
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import base64
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from struct import pack
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ragreplay.asgi.serving import serve_in_thread


@dataclass
class MockOptions:
    """How the mock behaves: latency, injected failures and an optional required API key."""

    latency_ms: float = 100.0
    fail_first: int = 0
    fail_status: int = 429
    retry_after: str | None = "1"
    api_key: str | None = None
    rate_limit: float | None = None
    burst: float | None = None
    ratelimit_headers: bool = True
    error_rate: float = 0.0
    seed: int = 0


@dataclass
class MockStats:
    """What the mock has seen (``rejected``: 429s of the rate limit; ``server_errors``: injected 500s)."""

    requests: int = 0
    completions: int = 0
    failures: int = 0
    rejected: int = 0
    server_errors: int = 0
    json_mode: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    embeddings: int = 0
    last_body: dict[str, Any] | None = None
    last_headers: dict[str, str] = field(default_factory=dict)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)

    def count(self, client: str, kind: str, words: int, completion_words: int = 0) -> None:
        """One answered request of ``client``: its words sent, its reply's words and its prompt kind."""
        seen = self.clients.setdefault(
            client, {"requests": 0, "words": 0, "completion_words": 0, "kinds": {}}
        )
        seen["requests"] += 1
        seen["words"] += words
        seen["completion_words"] += completion_words
        seen["kinds"][kind] = seen["kinds"].get(kind, 0) + 1


def _last_user(messages: list[dict[str, Any]]) -> str:
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    return users[-1] if users else ""


# RAGAS 0.4's prompts (ragas/metrics/_faithfulness.py, _answer_correctness.py): words of each instruction
RAGAS_KINDS = {
    "ragas_statements": "break down each sentence into one or more fully understandable statements",
    "ragas_nli": "judge the faithfulness of a series of statements based on a given context",
    "ragas_correctness": "classify them in one of the following categories: tp (true positive)",
}


# DeepEval 4.x's prompts (deepeval/metrics/faithfulness/templates, g_eval/templates): words of each instruction
DEEPEVAL_KINDS = {
    "deepeval_truths": 'with the "truths" key as a list of strings',
    "deepeval_claims": 'with the "claims" key as a list of strings',
    "deepeval_verdicts": "indicate whether each claim contradicts any facts in the retrieval context",
    "deepeval_reason": "concisely summarize the contradictions to justify the score",
    "geval_steps": "concise evaluation steps based on the criteria below",
    "geval_score": "you are an evaluator. given the following evaluation steps",
}


CLAIMS_WORDS = "list and check the claims of the answer"
"""Words of ragreplay's claims check (``metrics/llm.py``'s user message)."""
BATCH_ROW = '<checked_row n="'
"""How a row of ragreplay's batched claims check opens (``metrics/llm_batch.py``)."""


def prompt_kind(messages: list[dict[str, Any]]) -> str:
    """Which prompt ``messages`` are: a RAGAS or DeepEval kind, ``claims``, ``pairwise``, ``rewrite``, ``judge`` or
    ``answer``."""
    text = " ".join(str(m.get("content", "")) for m in messages).lower()
    for kind, words in (RAGAS_KINDS | DEEPEVAL_KINDS).items():
        if words in text:
            return kind
    if BATCH_ROW in text:  # several rows' claims checks in one call (``eval --rows-per-call``)
        return "claims_batch"
    if CLAIMS_WORDS in text:  # before "verdict": its data rules name one
        return "claims"
    if '"winner"' in text:
        return "pairwise"
    if "standalone" in text:
        return "rewrite"
    if "verdict" in text:
        return "judge"
    return "answer"


def _ragas_input(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON after the prompt's last ``input:`` (PydanticPrompt.to_string ends ``input: {...}\nOutput: ``)."""
    text = " ".join(str(m.get("content", "")) for m in messages)
    tail = text[text.lower().rfind("input: ") + len("input: ") :]
    tail = tail[: tail.rfind("Output:")] if "Output:" in tail else tail
    try:
        data = json.loads(tail.strip())
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part.strip()] or [text]


def ragas_reply(kind: str, messages: list[dict[str, Any]]) -> str:
    """The canned JSON for a RAGAS prompt of ``kind``, in the shape its output model expects."""
    data = _ragas_input(messages)
    if kind == "ragas_statements":
        return json.dumps({"statements": _sentences(str(data.get("answer", "")))})
    if kind == "ragas_nli":
        statements = [str(s) for s in data.get("statements", [])]
        verdicts = [{"statement": s, "reason": "mock", "verdict": 1} for s in statements]
        return json.dumps({"statements": verdicts})
    answer = [str(s) for s in data.get("answer", [])]
    return json.dumps({"TP": [{"statement": s, "reason": "mock"} for s in answer], "FP": [], "FN": []})


def _section(text: str, heading: str) -> str:
    """The block after the last ``heading`` line up to the prompt's closing ``JSON:`` line (DeepEval's layout)."""
    start = text.rfind(f"\n{heading}\n")
    if start < 0:
        return ""
    body = text[start + len(heading) + 2 :]
    end = body.rfind("\nJSON:")
    return (body[:end] if end >= 0 else body).strip()


def _listed(block: str) -> list[str]:
    """A list DeepEval rendered into its prompt (Python's or JSON's repr of a list of strings)."""
    try:
        items = ast.literal_eval(block)
    except (ValueError, SyntaxError):
        return _sentences(block) if block else []
    return [str(item) for item in items] if isinstance(items, list) else [str(items)]


def deepeval_reply(kind: str, messages: list[dict[str, Any]]) -> str:
    """The canned JSON for a DeepEval prompt of ``kind``, in the shape of its schema: truths and claims the
    sentences of the text or answer, every claim's verdict ``yes``, G-Eval's 3 steps and a full score (10 of
    0-10, no logprobs: DeepEval falls back to the raw score)."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if kind == "deepeval_truths":
        return json.dumps({"truths": _sentences(_section(text, "Text:"))})
    if kind == "deepeval_claims":
        return json.dumps({"claims": _sentences(_section(text, "AI Output:"))})
    if kind == "deepeval_verdicts":
        claims = _listed(_section(text, "Claims:"))
        return json.dumps({"verdicts": [{"verdict": "yes", "reason": None} for _ in claims]})
    if kind == "deepeval_reason":
        return json.dumps({"reason": "The score is 1.00 because no claim contradicts the context."})
    if kind == "geval_steps":
        steps = [
            "Compare the facts of the actual output with the expected output.",
            "Penalise contradictions.",
            "Penalise omitted facts of the expected output.",
        ]
        return json.dumps({"steps": steps})
    return json.dumps({"reason": "The actual output states the facts of the expected output.", "score": 10})


def _fenced(text: str, tag: str) -> str:
    found = re.search(f"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return found.group(1) if found else ""


def claims_batch_reply(messages: list[dict[str, Any]]) -> str:
    """ragreplay's batched claims check: each ``<checked_row n="k">`` block answered as :func:`claims_reply`
    answers one row, with its number, in ``{"rows": [...]}``."""
    user = _last_user(messages)
    blocks = re.findall(r'<checked_row n="(\d+)">\n(.*?)\n</checked_row>', user, re.S)
    rows = [{"row": int(n), **json.loads(_claims_object(block))} for n, block in blocks]
    return json.dumps({"rows": rows})


def claims_reply(messages: list[dict[str, Any]]) -> str:
    """ragreplay's ``ClaimsReply`` for its claims check: the answer's and the reference's sentences as claims
    (none for ``(no reference given)``), all supported and covered; every context ``[n]`` relevant."""
    return _claims_object(_last_user(messages))


def _claims_object(user: str) -> str:
    """The claims reply for the fenced row blocks in ``user``."""
    answer = _sentences(_fenced(user, "checked_answer"))
    reference = _fenced(user, "reference")
    reference_claims = [] if reference.startswith("(no reference") else _sentences(reference)
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\] ", _fenced(user, "contexts"), re.M)]
    return json.dumps(
        {
            "answer_claims": [
                {"claim": c, "supported_by_contexts": "yes", "supported_by_reference": "yes"} for c in answer
            ],
            "reference_claims": [
                {"claim": c, "covered_by_answer": "yes", "supported_by_contexts": "yes"}
                for c in reference_claims
            ],
            "contexts": [{"n": n, "relevant": "yes"} for n in numbers],
            "answer_relevance": 5,
            "reason": "mock",
        }
    )


def embedding_for(text: str, dims: int = 64) -> list[float]:
    """A deterministic unit vector: each word adds 1 to a bucket chosen by its hash."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()) or [""]:
        vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def reply_for(messages: list[dict[str, Any]]) -> str:
    """The deterministic reply to ``messages``."""
    text = " ".join(str(m.get("content", "")) for m in messages).lower()
    last_user = _last_user(messages)
    kind = prompt_kind(messages)
    if kind.startswith("ragas_"):
        return ragas_reply(kind, messages)
    if kind in DEEPEVAL_KINDS:
        return deepeval_reply(kind, messages)
    if kind == "claims_batch":
        return claims_batch_reply(messages)
    if kind == "claims":
        return claims_reply(messages)
    if '"winner"' in text:  # the pairwise judge's prompt: A wins, both scored
        scores = {"groundedness": 4, "completeness": 4, "directness": 4, "recency": 4}
        return json.dumps({"scores_a": scores, "scores_b": scores, "winner": "A", "reason": "mock"})
    if "standalone" in text:  # the rewriter's prompt (before "verdict": its data rules may name one)
        fenced = re.findall(r"<question>\n(.*?)\n</question>", last_user, re.S)
        questions = fenced or [
            line.split(":", 1)[1].strip()
            for line in last_user.splitlines()
            if line.strip().lower().startswith("question:")
        ]
        return json.dumps({"standalone": True, "query": questions[-1] if questions else last_user.strip()})
    if "verdict" in text:
        return json.dumps({"verdict": "FIT", "reason": "mock"})
    words = last_user.split()
    return "Mock answer about " + (" ".join(words[:8]) if words else "nothing") + "."


class ServerBucket:
    """The endpoint's request limit: ``rate`` tokens a second, at most ``capacity``, starting full."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.capacity, self._clock = rate, capacity, clock
        self.tokens, self._at = capacity, clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def admit(self) -> float | None:
        """Take a token: ``None`` when admitted, else the seconds until the next token."""
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / self.rate

    def headers(self) -> dict[str, str]:
        """The ``x-ratelimit-*-requests`` headers as OpenAI sends them."""
        self._refill()
        reset_ms = math.ceil((self.capacity - self.tokens) / self.rate * 1000.0)
        return {
            "x-ratelimit-limit-requests": f"{self.capacity:g}",
            "x-ratelimit-remaining-requests": str(int(self.tokens)),
            "x-ratelimit-reset-requests": f"{reset_ms}ms",
        }


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": "mock_error", "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def _authorised(request: Request, key: str) -> bool:
    return request.headers.get("authorization") == f"Bearer {key}" or request.headers.get("api-key") == key


def create_app(options: MockOptions, stats: MockStats) -> ASGIApp:
    """The ASGI app; ``options`` and ``stats`` are shared with the caller."""
    bucket = None
    if options.rate_limit is not None:
        bucket = ServerBucket(options.rate_limit, options.burst or options.rate_limit)
    rng = random.Random(options.seed)

    def limit_headers() -> dict[str, str]:
        return bucket.headers() if bucket is not None and options.ratelimit_headers else {}

    async def completions(request: Request) -> Response:
        return await _counted(request, _complete)

    async def embeddings(request: Request) -> Response:
        return await _counted(request, _embed)

    async def _counted(request: Request, handler: Callable[[Request, int], Any]) -> Response:
        stats.requests += 1
        number = stats.requests
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            response: Response = await handler(request, number)
            return response
        finally:
            stats.in_flight -= 1

    def _admit(request: Request, number: int) -> tuple[Response | None, dict[str, str]]:
        """The error this request gets (key, --fail-first, the limit, --error-rate), or None and headers."""
        if options.api_key is not None and not _authorised(request, options.api_key):
            stats.failures += 1
            return _error(401, "Incorrect API key provided"), {}
        if number <= options.fail_first:
            stats.failures += 1
            headers = {}
            if options.fail_status == 429 and options.retry_after is not None:
                headers["Retry-After"] = options.retry_after
            return _error(options.fail_status, f"mock failure {number} of {options.fail_first}", headers), {}
        wait = bucket.admit() if bucket is not None else None
        if wait is not None:
            stats.rejected += 1
            headers = {
                **limit_headers(),
                "retry-after-ms": str(math.ceil(wait * 1000.0)),
                "Retry-After": str(max(1, math.ceil(wait))),
            }
            return _error(429, "Rate limit reached for requests", headers), {}
        admitted = limit_headers()  # as the limit stood when this request was admitted
        if options.error_rate and rng.random() < options.error_rate:
            stats.server_errors += 1
            return _error(500, "The server had an error while processing your request", admitted), {}
        return None, admitted

    def _client(request: Request) -> str:
        return request.headers.get("user-agent", "-").split("/", 1)[0].strip() or "-"

    async def _rest_of_latency(arrived: float) -> None:
        """Wait out what is left of the latency since the request arrived: the mock's own work (reading the
        body, making the reply) happens inside the latency, as an endpoint's does, not on top of it."""
        left = options.latency_ms / 1000.0 - (time.monotonic() - arrived)
        if left > 0:
            await asyncio.sleep(left)

    async def _complete(request: Request, number: int) -> Response:
        arrived = time.monotonic()
        try:
            body = await request.json()
            messages = list(body["messages"])
        except (ValueError, KeyError, TypeError):
            stats.failures += 1
            return _error(400, "body must be JSON with a 'messages' list")
        stats.last_body = body
        stats.last_headers = dict(request.headers)
        refused, admitted = _admit(request, number)
        if refused is not None:
            return refused
        if (body.get("response_format") or {}).get("type") == "json_object":
            stats.json_mode += 1
        content = reply_for(messages)
        prompt_tokens = sum(word_count(str(m.get("content", ""))) for m in messages)
        completion_tokens = len(content.split())
        stats.completions += 1
        stats.count(_client(request), prompt_kind(messages), prompt_tokens, completion_tokens)
        response = JSONResponse(
            headers=admitted,
            content={
                "id": f"chatcmpl-mock-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "mock"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )
        await _rest_of_latency(arrived)
        return response

    async def _embed(request: Request, number: int) -> Response:
        arrived = time.monotonic()
        try:
            body = await request.json()
            raw = body["input"]
        except (ValueError, KeyError, TypeError):
            stats.failures += 1
            return _error(400, "body must be JSON with an 'input'")
        # a string, a list of strings, or token ids (one list, or a list of lists): ids embed as words
        inputs = [raw] if isinstance(raw, str) or (raw and isinstance(raw[0], int)) else list(raw)
        texts = [item if isinstance(item, str) else " ".join(map(str, item)) for item in inputs]
        refused, admitted = _admit(request, number)
        if refused is not None:
            return refused
        words = sum(len(text.split()) for text in texts)
        stats.embeddings += 1
        stats.count(_client(request), "embeddings", words)
        data: list[dict[str, Any]] = []
        for index, text in enumerate(texts):
            vector = embedding_for(text)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        response = JSONResponse(
            headers=admitted,
            content={
                "object": "list",
                "data": data,
                "model": body.get("model", "mock-embedding"),
                "usage": {"prompt_tokens": words, "total_tokens": words},
            },
        )
        await _rest_of_latency(arrived)
        return response

    async def get_stats(request: Request) -> Response:
        return JSONResponse(asdict(stats))

    async def reset(request: Request) -> Response:
        fresh = asdict(MockStats())
        for key, value in fresh.items():
            setattr(stats, key, value)
        return JSONResponse({"reset": True})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "mock", "object": "model"}]})

    routes = [
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/chat/completions", completions, methods=["POST"]),
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/embeddings", embeddings, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/stats", get_stats, methods=["GET"]),
        Route("/reset", reset, methods=["POST"]),
    ]
    app = Starlette(routes=routes)

    async def lean(scope: Scope, receive: Receive, send: Send) -> None:
        # Chat completions straight to their handler: Starlette's middleware stack and router cost the mock (a
        # process on the client's own cores in the benchmarks) CPU on every request; the answer is the same.
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in COMPLETION_PATHS:
            response = await completions(Request(scope, receive))
            await response(scope, receive, send)
            return
        await app(scope, receive, send)

    return lean


COMPLETION_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_WORDS_MEMO: dict[str, int] = {}


def word_count(text: str) -> int:
    """``len(text.split())``, remembered for long texts (a judge's system prompt comes with every request)."""
    if len(text) < 256:
        return len(text.split())
    words = _WORDS_MEMO.get(text)
    if words is None:
        if len(_WORDS_MEMO) >= 256:
            _WORDS_MEMO.clear()
        words = _WORDS_MEMO[text] = len(text.split())
    return words


SERVER_OPTIONS: dict[str, Any] = {
    "log_level": "warning",
    "access_log": False,
    "lifespan": "off",
    "backlog": 4096,
    "timeout_keep_alive": 30,
    "timeout_graceful_shutdown": 1,
    "proxy_headers": False,  # no proxy in front of a mock: uvicorn's middleware for it is skipped
}


def run_in_thread(
    port: int = 0, *, host: str = "127.0.0.1", **options: Any
) -> tuple[str, Callable[[], None]]:
    """Start the mock in a background thread; returns ``(base_url, stop)`` with base_url ending in ``/v1``.

    ``options`` are :class:`MockOptions` fields (latency_ms, fail_first, fail_status, retry_after, api_key,
    rate_limit, burst, ratelimit_headers, error_rate, seed).
    """
    app = create_app(MockOptions(**options), MockStats())
    stack = ExitStack()
    base = stack.enter_context(serve_in_thread(app, host=host, join_timeout=5, port=port, **SERVER_OPTIONS))
    return f"{base}/v1", stack.close


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--fail-first", type=int, default=0, help="fail the first N requests")
    parser.add_argument("--fail-status", type=int, default=429, choices=[429, 500, 502, 503])
    parser.add_argument("--retry-after", default="1", help="Retry-After header value sent with 429")
    parser.add_argument("--api-key", default=None, help="require this key (Bearer or api-key header)")
    parser.add_argument("--rate-limit", type=float, default=None, help="requests a second (token bucket)")
    parser.add_argument("--burst", type=float, default=None, help="bucket size (default: --rate-limit)")
    parser.add_argument("--no-ratelimit-headers", action="store_true", help="send no x-ratelimit-* headers")
    parser.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered 500")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    options = MockOptions(
        args.latency_ms,
        args.fail_first,
        args.fail_status,
        args.retry_after,
        args.api_key,
        rate_limit=args.rate_limit,
        burst=args.burst,
        ratelimit_headers=not args.no_ratelimit_headers,
        error_rate=args.error_rate,
        seed=args.seed,
    )
    app = create_app(options, MockStats())
    print(
        f"mock OpenAI server on http://{args.host}:{args.port}/v1 (latency {args.latency_ms:g} ms)",
        flush=True,
    )
    uvicorn.run(app, host=args.host, port=args.port, **SERVER_OPTIONS)


if __name__ == "__main__":
    main()
