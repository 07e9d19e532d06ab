"""Pull traces, observations and scores from Langfuse's public API into a file :mod:`langfuse` reads.

Pages of ``GET /api/public/traces`` (``fromTimestamp``), ``/api/public/observations`` (``fromStartTime``) and
``/api/public/scores`` (``fromTimestamp``) are fetched with HTTP basic auth (the project's public and secret
keys from ``LANGFUSE_PUBLIC_KEY`` / ``LANGFUSE_SECRET_KEY``), a timeout on every request and retries of 429s
and 5xx under :class:`~ragreplay.core.retry.RetryPolicy`. Observations and scores of traces not pulled are
dropped; each page is saved as one JSON line (``{"data": [...], "meta": {...}}``), the "pages saved from its
API" shape :func:`~ragreplay.ingest.langfuse.read_langfuse` reads, so ingesting it follows the export path.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from ragreplay.core.retry import RetryPolicy, retry_after_seconds
from ragreplay.errors import ConfigError, RagreplayError, describe_exception

PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"
_ENDPOINTS = (
    ("traces", "/api/public/traces", "fromTimestamp"),
    ("observations", "/api/public/observations", "fromStartTime"),
    ("scores", "/api/public/scores", "fromTimestamp"),
)


@dataclass(frozen=True)
class LangfusePull:
    """What to pull: the Langfuse base ``url``, records since ``since`` (all when ``None``), at most
    ``limit`` traces, and the safety limits (page size, pages per endpoint, records in all, timeout)."""

    url: str
    since: datetime | None = None
    limit: int | None = None
    page_size: int = 100
    max_pages: int = 1000
    max_items: int = 200_000
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(max_retries=4, budget_s=120.0))


@dataclass
class PullSummary:
    """How many records were saved per endpoint, and whether a cap stopped the pull early."""

    counts: dict[str, int] = field(default_factory=dict)
    capped: bool = False


def langfuse_keys(env: Mapping[str, str]) -> tuple[str, str]:
    """The public and secret keys from ``env``, or a :class:`ConfigError` naming the missing variables."""
    public, secret = env.get(PUBLIC_KEY_ENV, "").strip(), env.get(SECRET_KEY_ENV, "").strip()
    missing = [name for name, value in ((PUBLIC_KEY_ENV, public), (SECRET_KEY_ENV, secret)) if not value]
    if missing:
        raise ConfigError(
            f"--from-langfuse needs {' and '.join(missing)} in the environment. Fix: export the project's "
            f"API keys (Langfuse > Settings > API keys) as {PUBLIC_KEY_ENV} and {SECRET_KEY_ENV}"
        )
    return public, secret


def pull_langfuse(
    pull: LangfusePull,
    dest: Path,
    env: Mapping[str, str],
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str, int], None] | None = None,
) -> PullSummary:
    """Save the traces, observations and scores of ``pull`` to ``dest`` (one API page per line).

    Raises :class:`ConfigError` on rejected keys and :class:`RagreplayError` when Langfuse cannot be reached,
    keeps failing or answers something that is not a page; ``dest`` is then incomplete: the caller discards it.
    ``progress(endpoint, records so far)`` follows the pull.
    """
    if not pull.url.startswith(("http://", "https://")):
        raise ConfigError(
            f"--from-langfuse {pull.url!r} is not an http(s) URL. Fix: e.g. https://cloud.langfuse.com"
        )
    fetcher = _Fetcher(pull, langfuse_keys(env), sleep)
    summary = PullSummary()
    trace_ids: set[str] = set()
    with fetcher.client, dest.open("w", encoding="utf-8") as out:
        for name, path, since_param in _ENDPOINTS:
            summary.counts[name] = 0
            limit = pull.limit if name == "traces" else None
            for page, meta in fetcher.pages(path, since_param, limit, summary):
                if name == "traces":
                    trace_ids.update(str(r["id"]) for r in page if r.get("id") is not None)
                else:
                    page = [r for r in page if str(r.get("traceId")) in trace_ids]
                summary.counts[name] += len(page)
                out.write(json.dumps({"data": page, "meta": meta}, ensure_ascii=False) + "\n")
                if progress is not None:
                    progress(name, summary.counts[name])
    return summary


class _Fetcher:
    def __init__(self, pull: LangfusePull, keys: tuple[str, str], sleep: Callable[[float], None]) -> None:
        self.pull = pull
        self.sleep = sleep
        self.rng = random.Random()
        self.items = 0
        self.client = httpx.Client(
            base_url=pull.url.rstrip("/"), auth=keys, timeout=pull.timeout_s, follow_redirects=False
        )

    def pages(
        self, path: str, since_param: str, limit: int | None, summary: PullSummary
    ) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any]]]:
        """Each page's records (objects only) and meta, until the last page, ``limit`` records or a cap."""
        taken = 0
        for number in range(1, self.pull.max_pages + 1):
            params: dict[str, str | int] = {"page": number, "limit": self.pull.page_size}
            if self.pull.since is not None:
                params[since_param] = self.pull.since.astimezone(UTC).isoformat().replace("+00:00", "Z")
            body = self._get(path, params)
            records = [r for r in body["data"] if isinstance(r, dict)]
            if limit is not None:
                records = records[: max(0, limit - taken)]
            records = records[: max(0, self.pull.max_items - self.items)]
            taken += len(records)
            self.items += len(records)
            yield records, body["meta"]
            total_pages = body["meta"].get("totalPages")
            if not body["data"] or (isinstance(total_pages, int) and number >= total_pages):
                return
            if (limit is not None and taken >= limit) or self.items >= self.pull.max_items:
                summary.capped = self.items >= self.pull.max_items
                return
        summary.capped = True

    def _get(self, path: str, params: dict[str, str | int]) -> dict[str, Any]:
        failures, attempt = 0, 0
        throttled_since: float | None = None
        where = f"GET {self.pull.url.rstrip('/')}{path}"
        while True:
            retry_after: float | None = None
            try:
                response = self.client.get(path, params=params)
            except httpx.TransportError as exc:
                problem, throttled = f"cannot reach Langfuse ({describe_exception(exc)})", False
            else:
                status = response.status_code
                if status in (401, 403):
                    raise ConfigError(
                        f"{where}: Langfuse rejected the API keys (HTTP {status}). Fix: set {PUBLIC_KEY_ENV} "
                        f"and {SECRET_KEY_ENV} to a key pair of the project at {self.pull.url}"
                    )
                if status < 400:
                    return _page(response, where)
                if status != 429 and status < 500:
                    raise RagreplayError(f"{where}: HTTP {status}: {response.text[:200]!r}")
                problem, throttled = f"HTTP {status}", status == 429
                retry_after = retry_after_seconds(response.headers, datetime.now(UTC))
            now = time.monotonic()
            if throttled:
                throttled_since = now if throttled_since is None else throttled_since
            else:
                failures, throttled_since = failures + 1, None
            if self.pull.retry.gives_up(failures, 0.0 if throttled_since is None else now - throttled_since):
                raise RagreplayError(
                    f"{where}: {problem}, still after {attempt + 1} attempt(s). Fix: check the URL and that "
                    "Langfuse is up, then run the command again"
                )
            self.sleep(self.pull.retry.delay(attempt, retry_after, self.rng))
            attempt += 1


def _page(response: httpx.Response, where: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not (
        isinstance(body, dict) and isinstance(body.get("data"), list) and isinstance(body.get("meta"), dict)
    ):
        raise RagreplayError(
            f"{where}: the answer is not a page of Langfuse's public API ({{data: [...], meta: {{...}}}}). "
            "Fix: give the base URL of the Langfuse server, e.g. https://cloud.langfuse.com"
        )
    return body
