"""An HTTP endpoint as the RAG under test: a templated request in, dotted paths into the JSON response out."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from ragreplay.core.ids import content_hash
from ragreplay.core.reply_shapes import coerce_chunks, coerce_tokens, get_path
from ragreplay.core.retry import RetryPolicy, retry_after_seconds
from ragreplay.core.types import Answer, Case
from ragreplay.errors import ConfigError, InputProblem, describe_exception
from ragreplay.targets.base import TargetBase
from ragreplay.targets.config import HttpTargetConfig, expand_env

_PLACEHOLDER = re.compile(r"\{(question|user_id|conversation_id|turn_index|history_json|tags_json)\}")
_EXCERPT = 300


def template_values(question: str, case: Case) -> dict[str, str]:
    """The values a request template can use, as text."""
    history = [{"role": m.role.value, "content": m.content} for m in case.history]
    return {
        "question": question,
        "user_id": case.user_id or "",
        "conversation_id": case.conversation_id,
        "turn_index": str(case.turn_index),
        "history_json": json.dumps(history, ensure_ascii=False),
        "tags_json": json.dumps(case.tags, ensure_ascii=False, sort_keys=True),
    }


def render_template(template: Any, values: Mapping[str, str], structured: Mapping[str, Any]) -> Any:
    """Substitute ``{name}`` placeholders in every string leaf of a JSON template.

    A leaf that is exactly ``{history}`` or ``{tags}`` becomes the structured value (a list / an object)
    rather than its JSON text.
    """
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in structured:
            return structured[template[1:-1]]
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    if isinstance(template, dict):
        return {k: render_template(v, values, structured) for k, v in template.items()}
    if isinstance(template, list):
        return [render_template(v, values, structured) for v in template]
    return template


class _Transient(Exception):
    """A failure worth retrying (429, 5xx, timeout, connection error); ``throttled`` for a 429."""

    def __init__(self, message: str, retry_after: float | None = None, throttled: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.throttled = throttled


class _Permanent(Exception):
    """A failure not worth retrying."""


class HttpTarget(TargetBase):
    """Sends one request per question, retrying transient failures with backoff; ``answer`` never raises.

    The config's ``retries``, ``backoff_s``, ``max_backoff_s`` and ``retry_budget_s`` are the shared
    :class:`~ragreplay.core.retry.RetryPolicy`'s ``max_retries``, ``base_s``, ``cap_s`` and ``budget_s``. As for
    model calls, a 429 is back-pressure: waited out (its Retry-After, else backoff) without counting toward
    ``retries``, until the target has answered nothing but 429s for ``retry_budget_s``.
    """

    def __init__(
        self,
        cfg: HttpTargetConfig,
        *,
        name: str,
        version: str | None = None,
        source: str = "<config>",
        client: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cfg = cfg
        self._clock = clock
        self._throttled_since: float | None = None
        self._retry = RetryPolicy(
            max_retries=cfg.retries,
            base_s=cfg.backoff_s,
            cap_s=cfg.max_backoff_s,
            budget_s=cfg.retry_budget_s,
        )
        self._rng = rng or random.Random()
        self._name = name
        self._version = version or content_hash(cfg.model_dump(mode="json"))
        self._url = expand_env(cfg.url, source, "target.url")
        if not self._url.startswith(("http://", "https://")):
            raise ConfigError(
                str(
                    InputProblem(
                        source,
                        None,
                        "target.url",
                        f"'{self._url}' is not an http(s) URL",
                        "use http://host/path",
                    )
                )
            )
        self._headers = expand_env(cfg.headers, source, "target.headers")
        body = cfg.body if cfg.body is not None or cfg.method == "GET" else {"question": "{question}"}
        self._body = expand_env(body, source, "target.body")
        self._client = client
        self._own_client = client is None
        self._semaphore = asyncio.Semaphore(cfg.max_concurrency)

    async def answer(self, question: str, case: Case) -> Answer:
        """Ask the endpoint; failures (after retries) come back as ``Answer.error`` with the latency spent."""
        async with self._semaphore:
            start = time.perf_counter()
            attempt = failures = throttles = 0
            while True:
                attempt += 1
                try:
                    answer = await self._attempt(question, case)
                except _Transient as exc:
                    if exc.throttled:
                        throttles += 1
                        if self._throttled_since is None:
                            self._throttled_since = self._clock()
                    else:
                        failures += 1
                    throttled_s = (
                        0.0 if self._throttled_since is None else self._clock() - self._throttled_since
                    )
                    if self._retry.gives_up(failures, throttled_s):
                        return self._failed(str(exc), start, attempt)
                    tries = throttles if exc.throttled else failures
                    await asyncio.sleep(self._retry.delay(tries - 1, exc.retry_after, self._rng))
                    continue
                except _Permanent as exc:
                    return self._failed(str(exc), start, attempt)
                self._throttled_since = None
                elapsed = (time.perf_counter() - start) * 1000
                extra = {**answer.extra, "attempts": attempt}
                return answer.model_copy(update={"latency_ms": elapsed, "extra": extra})

    async def aclose(self) -> None:
        """Close the HTTP client this target opened."""
        if self._client is not None and self._own_client:
            await self._client.aclose()
            self._client = None

    def _failed(self, message: str, start: float, attempts: int) -> Answer:
        elapsed = (time.perf_counter() - start) * 1000
        if attempts > 1:
            message += f" (after {attempts} attempts)"
        return Answer(text="", error=message, latency_ms=elapsed, extra={"attempts": attempts})

    async def _attempt(self, question: str, case: Case) -> Answer:
        values = template_values(question, case)
        structured = {
            "history": json.loads(values["history_json"]),
            "tags": dict(case.tags),
        }
        url = _PLACEHOLDER.sub(lambda m: quote(values[m.group(1)], safe=""), self._url)
        headers = {k: _PLACEHOLDER.sub(lambda m: values[m.group(1)], v) for k, v in self._headers.items()}
        body = render_template(self._body, values, structured)
        request: dict[str, Any] = {"headers": headers}
        if self._cfg.method == "GET":
            if isinstance(body, dict):
                request["params"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
        elif body is not None:
            request["json"] = body
        if self._client is None:
            limits = httpx.Limits(max_connections=self._cfg.max_concurrency)
            self._client = httpx.AsyncClient(timeout=self._cfg.timeout_s, limits=limits)
        try:
            response = await self._client.request(self._cfg.method, url, **request)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timeout after {self._cfg.timeout_s:g}s ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise _Transient(f"connection error: {describe_exception(exc)}") from None
        status = response.status_code
        if status == 429 or status >= 500:
            retry_after = retry_after_seconds(response.headers, datetime.now(UTC))
            raise _Transient(
                f"HTTP {status}: {_excerpt(response.text)}", retry_after, throttled=status == 429
            )
        if status >= 400:
            raise _Permanent(f"HTTP {status}: {_excerpt(response.text)}")
        return self._parse(response)

    def _parse(self, response: httpx.Response) -> Answer:
        cfg = self._cfg
        if cfg.answer_path is None:
            return Answer(text=response.text, unpriced_calls=1, extra={"status": response.status_code})
        try:
            data = response.json()
        except ValueError:
            raise _Permanent(f"response is not JSON: {_excerpt(response.text)}") from None
        text = self._lookup(data, "answer_path", cfg.answer_path, response)
        if not isinstance(text, str):
            raise _Permanent(f"answer_path '{cfg.answer_path}' is a {type(text).__name__}, not text")
        try:
            contexts = coerce_chunks(
                self._lookup(data, "contexts_path", cfg.contexts_path, response),
                cfg.context_id_field,
                cfg.context_score_field,
                cfg.context_text_field,
            )
            tokens = coerce_tokens(self._lookup(data, "tokens_path", cfg.tokens_path, response))
            cost = self._lookup(data, "cost_path", cfg.cost_path, response)
            cost_usd = float(cost) if cost is not None else 0.0  # no cost: unknown, counted as unpriced
        except (ValueError, TypeError) as exc:
            raise _Permanent(f"bad response: {exc}") from None
        return Answer(
            text=text,
            contexts=contexts,
            tokens=tokens,
            cost_usd=cost_usd,
            unpriced_calls=int(cost is None),
            extra={"status": response.status_code},
        )

    @staticmethod
    def _lookup(data: Any, field: str, path: str | None, response: httpx.Response) -> Any:
        if path is None:
            return None
        try:
            return get_path(data, path)
        except KeyError as exc:
            raise _Permanent(
                f"{field} '{path}': no '{exc.args[0]}' in response {_excerpt(response.text)}"
            ) from None


def http_target_from_config(cfg: HttpTargetConfig, name: str, source: str) -> HttpTarget:
    """Build an HTTP target; ``${VAR}`` in url, headers and body are expanded now (missing -> ConfigError)."""
    return HttpTarget(cfg, name=name, source=source)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[:_EXCERPT] + "..."
