"""A whole replay (store, writer, cache, limits, aiohttp client) against the mock endpoint in process, while it
rate-limits: every case gets its verdict; past the retry budget the run ends and a re-run finishes it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragreplay.asgi.serving import serve_in_thread
from ragreplay.core.runs import ResultStatus, SourceRecord
from ragreplay.providers.config import ProviderConfig
from ragreplay.replay.replay_run import replay, select_cases
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mock = _load("mock_openai_server")
bench = _load("replay_throughput")


@pytest.fixture
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Any]]:
    """The mock on a free port with the options the test passes (indirect parametrize): (base_url, its
    options, its stats); ``fail_first`` may be changed while it runs."""
    options = mock.MockOptions(latency_ms=5, **getattr(request, "param", {}))
    stats = mock.MockStats()
    with serve_in_thread(mock.create_app(options, stats), join_timeout=5, **mock.SERVER_OPTIONS) as base:
        yield f"{base}/v1", options, stats


def store_with_cases(tmp_path: Path, n: int) -> Store:
    store = Store.open(str(tmp_path / "rr.db"))
    source = SourceRecord(id="src", path="synthetic", format="canonical", ingested_at=datetime.now(UTC))
    store.cases.write_source(source, bench.synthetic_items(n))
    return store


def run_once(store: Store, base_url: str, **provider: Any) -> dict[ResultStatus, int]:
    settings = Settings(
        db=store.url, judge="mock:m", providers={"mock": ProviderConfig(base_url=base_url, **provider)}
    )
    target = FakeTarget(echo_old_answer=True, name="echo")
    run = asyncio.run(replay(store, settings, target, select_cases(store), {}, env={}))
    return store.runs.result_counts(run.id)


# 60 requests a second, a burst of 5, no x-ratelimit headers: the pace is learned from 429s alone
@pytest.mark.parametrize(
    "endpoint", [{"rate_limit": 60.0, "burst": 5.0, "ratelimit_headers": False}], indirect=True
)
def test_every_case_gets_a_verdict_while_the_endpoint_rate_limits(tmp_path: Path, endpoint: Any) -> None:
    base_url, _, stats = endpoint
    store = store_with_cases(tmp_path, 200)
    try:
        counts = run_once(store, base_url)
    finally:
        store.close()
    assert counts == {ResultStatus.DONE: 200}
    assert stats.completions == 300  # a judge call per case, a rewrite per follow-up
    assert 0 < stats.rejected <= 150  # it was limited; generous: a loaded machine sends in lumps


@pytest.mark.parametrize(  # an endpoint that rejects everything, until told otherwise
    "endpoint", [{"fail_first": 10**9, "fail_status": 429, "retry_after": "0.05"}], indirect=True
)
def test_a_run_past_the_retry_budget_ends_and_a_re_run_finishes_it(tmp_path: Path, endpoint: Any) -> None:
    base_url, options, stats = endpoint
    store = store_with_cases(tmp_path, 20)
    try:
        first = run_once(store, base_url, retry_budget_s=0.5)
        assert first == {ResultStatus.ERROR: 20}  # ended, not hung: each case an error row
        options.fail_first = 0  # the endpoint recovers
        second = run_once(store, base_url, retry_budget_s=0.5)
    finally:
        store.close()
    assert second == {ResultStatus.DONE: 20}
    assert stats.completions == 30
