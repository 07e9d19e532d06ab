"""`ragreplay run` against a PostgreSQL store that stops answering mid-run (issue 12: the connection stays open,
nothing answers; it used to hang for minutes) or whose connection is lost (issue 13: a 225-line traceback): the
command ends in bounded time with the named error, exit 75 and no traceback, and the same command afterwards
resumes the run and finishes it without paying again for what was finished."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from ragreplay.demo.sample import build_sample
from ragreplay.store import Store
from relay import TcpRelay

TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"
CONCURRENCY = 4
# Small store timeouts so the stall is noticed in seconds; the bound below is generous for a loaded machine.
STORE_ENV = {"RAGREPLAY_DB_TIMEOUT_S": "1", "RAGREPLAY_DB_CONNECT_TIMEOUT_S": "2"}
ENDS_WITHIN_S = 45


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [str(json.loads(line)["key"]) for line in log.read_text().splitlines() if line.strip()]


def _run_args(tmp_path: Path, url: str) -> list[str]:
    target = str(tmp_path / "candidate.yaml")
    return [
        "run",
        "--target",
        target,
        "--judge",
        "fake:default",
        "--db",
        url,
        "--concurrency",
        str(CONCURRENCY),
    ]


def _stop_mid_run(tmp_path: Path, store_url: str, stop: Callable[[TcpRelay], None]) -> None:
    sample = build_sample(60)
    sample.write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, **STORE_ENV, "RAGREPLAY_FAKE_CALL_LOG": str(log), "COLUMNS": "200"}
    ingest = _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", store_url], env)
    assert ingest.wait(60) == 0, ingest.stderr.read() if ingest.stderr else ""

    relay = TcpRelay(5432)
    try:
        # First attempt, through the relay: slow model calls, so the store goes away with cases in flight.
        first = _cli(
            _run_args(tmp_path, relay.url_for(store_url)), {**env, "RAGREPLAY_FAKE_LATENCY_MS": "60"}
        )
        deadline = time.monotonic() + 60
        while len(_calls(log)) < 20:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        stop(relay)
        stopped = time.monotonic()
        try:
            _, err = first.communicate(timeout=ENDS_WITHIN_S)
        except subprocess.TimeoutExpired:
            first.kill()
            pytest.fail(f"`ragreplay run` still hangs {ENDS_WITHIN_S} s after the store stopped answering")
        took = time.monotonic() - stopped
        first_calls = _calls(log)
    finally:
        relay.resume()
        relay.stop()

    # stderr is a pipe: progress lines ("replay: ...") come first, then the error
    error = [line for line in err.splitlines() if not line.startswith("replay: ")]
    text = " ".join(" ".join(error).split())
    assert first.returncode == 75, err
    assert "Traceback" not in err and len(error) <= 6, err
    assert text.startswith("error: the store at postgresql://postgres@127.0.0.1:") and "/test" in text
    assert "Nothing finished was lost: run the same command again to resume" in text
    assert took < ENDS_WITHIN_S

    with Store.open(store_url) as store:
        (run,) = store.runs.list_runs()
        done_before = store.runs.result_counts(run.id).get("done", 0)
    assert 0 < done_before < len(sample.expected)

    # Second attempt, straight to the database: the same run resumes and finishes.
    second = _cli(_run_args(tmp_path, store_url), env)
    assert second.wait(120) == 0, second.stderr.read() if second.stderr else ""
    second_calls = _calls(log)[len(first_calls) :]
    with Store.open(store_url) as store:
        (resumed,) = store.runs.list_runs()
        results = store.runs.load_results(run.id)
    assert resumed.id == run.id and resumed.status == "done"
    assert len(results) == len({r.case_id for r in results}) == len(sample.expected)

    # Nothing skipped, and nothing finished paid twice: only the calls in flight at the stall were repeated.
    fresh_log = tmp_path / "fresh.jsonl"
    fresh_db = str(tmp_path / "fresh.db")
    fresh_env = {**env, "RAGREPLAY_FAKE_CALL_LOG": str(fresh_log)}
    assert _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", fresh_db], fresh_env).wait(60) == 0
    assert _cli(_run_args(tmp_path, fresh_db), fresh_env).wait(120) == 0
    fresh = _calls(fresh_log)
    assert set(first_calls) | set(second_calls) == set(fresh)
    repeated = Counter(first_calls) & Counter(second_calls)
    assert sum(repeated.values()) <= 2 * CONCURRENCY, repeated
    assert len(second_calls) <= len(fresh) - done_before  # every case done before made a call not made again


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_store_that_stops_answering_ends_the_run_with_the_fix_and_resume_finishes(
    tmp_path: Path, store_url: str
) -> None:
    _stop_mid_run(tmp_path, store_url, TcpRelay.pause)


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_connection_lost_mid_run_is_the_same_named_error_and_resume_finishes(
    tmp_path: Path, store_url: str
) -> None:
    _stop_mid_run(tmp_path, store_url, TcpRelay.cut)
