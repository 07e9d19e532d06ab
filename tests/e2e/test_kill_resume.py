"""A run killed with SIGKILL midway resumes: every case judged exactly once, no model call repeated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from ragreplay.demo.sample import build_sample
from ragreplay.store import Store

TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


def _default_sigint() -> None:
    # A job started in the background by a non-interactive shell inherits SIGINT ignored, and so would the CLI
    # under test: Ctrl-C must reach it as it does in a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )


def _calls(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_sigkill_then_resume(tmp_path: Path, store_url: str) -> None:
    sample = build_sample(60)
    sample.write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    log = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "RAGREPLAY_FAKE_CALL_LOG": str(log),
        "RAGREPLAY_FAKE_LATENCY_MS": "5",
        "COLUMNS": "120",
    }
    ingest = _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", store_url], env)
    assert ingest.wait(60) == 0
    run_args = [
        "run",
        "--target",
        str(tmp_path / "candidate.yaml"),
        "--judge",
        "fake:default",
        "--db",
        store_url,
        "--concurrency",
        "4",
    ]

    # First attempt: every model call after the 25th (of 57) hangs, so the kill lands at a known point.
    first = _cli(run_args, {**env, "RAGREPLAY_FAKE_HANG_AFTER": "25"})
    deadline = time.monotonic() + 60
    while len(_calls(log)) < 25 and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)  # let the writer save what the finished calls produced
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert len(_calls(log)) == 25

    store = Store.open(store_url)
    try:
        (run,) = store.runs.list_runs()
        assert run.status == "running"  # killed: nobody marked it
        partial = store.runs.result_counts(run.id)
        assert 0 < partial.get("done", 0) < len(sample.expected)
    finally:
        store.close()

    # Second attempt: the same command resumes the same run and finishes it.
    second = _cli(run_args, env)
    assert second.wait(120) == 0, second.stderr.read() if second.stderr else ""

    calls = _calls(log)
    keys = Counter(str(c["key"]) for c in calls)
    assert max(keys.values()) == 1, "a model call was repeated after resume"

    store = Store.open(store_url)
    try:
        (resumed,) = store.runs.list_runs()
        assert resumed.id == run.id and resumed.status == "done"
        results = store.runs.load_results(run.id)
    finally:
        store.close()
    assert len(results) == len({r.case_id for r in results}) == len(sample.expected)
    judged = [r for r in results if r.judgment is not None]
    assert len(judged) == len(sample.expected) - sample.outcome_counts()["ERROR"]
    assert all(r.status in ("done", "error") for r in results)

    # Same calls as an uninterrupted run: nothing paid twice, nothing skipped.
    fresh_log = tmp_path / "fresh.jsonl"
    fresh_db = str(tmp_path / "fresh.db")
    fresh_env = {**env, "RAGREPLAY_FAKE_CALL_LOG": str(fresh_log)}
    assert _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", fresh_db], fresh_env).wait(60) == 0
    fresh_args = [*run_args[:-4], "--db", fresh_db, "--concurrency", "4"]
    assert _cli(fresh_args, fresh_env).wait(120) == 0
    assert set(keys) == {str(c["key"]) for c in _calls(fresh_log)}


def test_ctrl_c_marks_run_interrupted_and_keeps_finished_cases(tmp_path: Path, store_url: str) -> None:
    sample = build_sample(60)
    sample.write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "COLUMNS": "120"}
    assert _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", store_url], env).wait(60) == 0
    run_args = [
        "run",
        "--target",
        str(tmp_path / "candidate.yaml"),
        "--judge",
        "fake:default",
        "--db",
        store_url,
    ]
    first = _cli(run_args, {**env, "RAGREPLAY_FAKE_HANG_AFTER": "20"})
    deadline = time.monotonic() + 60
    while len(_calls(log)) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    first.send_signal(signal.SIGINT)
    assert first.wait(20) == 130
    err = first.stderr.read().decode() if first.stderr else ""
    assert "interrupted" in err and "Traceback" not in err

    store = Store.open(store_url)
    try:
        (run,) = store.runs.list_runs()
        assert run.status == "interrupted"
        done_before = store.runs.result_counts(run.id).get("done", 0)
        assert done_before > 0
    finally:
        store.close()
    assert _cli(run_args, env).wait(120) == 0
    store = Store.open(store_url)
    try:
        (resumed,) = store.runs.list_runs()
        assert resumed.id == run.id and resumed.status == "done"
    finally:
        store.close()
    assert max(Counter(str(c["key"]) for c in _calls(log)).values()) == 1
