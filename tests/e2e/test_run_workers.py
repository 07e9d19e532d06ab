"""`run --workers`: worker processes sharing one store replay every case of one run exactly once, on SQLite
and PostgreSQL, with the same calls and results as one plain `run`; workers started at once share one run,
which one of them marks done; a worker killed with SIGKILL mid-run loses nothing, the other finishes its cases
(repeating only the calls it had in flight) and marks the run done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragreplay.demo.sample import build_sample
from ragreplay.store import Store
from ragreplay.store.claim_queues import run_queue

TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


def _default_sigint() -> None:
    # a process started in the background by a non-interactive shell inherits SIGINT ignored: Ctrl-C must reach it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )


def _keys(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()]


def _setup(tmp_path: Path, url: str, n: int) -> None:
    sample = build_sample(n)
    sample.write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    ingest = _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", url], dict(os.environ))
    assert ingest.wait(60) == 0, ingest.stderr.read() if ingest.stderr else ""


def _run_args(tmp_path: Path, url: str, *extra: str) -> list[str]:
    target = str(tmp_path / "candidate.yaml")
    # without the model cache every case makes its own calls, even those another case makes alike: the calls
    # made count the cases replayed
    return ["run", "--target", target, "--judge", "fake:default", "--db", url, "--cache", "off", *extra]


def _results(url: str) -> tuple[list[Any], dict[str, tuple[object, ...]]]:
    """The store's runs, and the one run's results by case: status, verdict, FIT, new answer, error."""
    store = Store.open(url)
    try:
        runs = store.runs.list_runs()
        assert len(runs) == 1
        results = store.runs.load_results(runs[0].id)
        assert store.work_claims.claims(run_queue(runs[0].id)) == {}  # every claim released, none parked
    finally:
        store.close()
    return runs, {
        r.case_id: (
            str(r.status),
            r.verdict,
            r.judgment.fit if r.judgment else None,
            r.answer.text if r.answer else None,
            r.error,
        )
        for r in results
    }


def _reference(tmp_path: Path) -> tuple[dict[str, tuple[object, ...]], Counter[str]]:
    """The results and calls of one plain `run` (one process) of the same cases in a fresh store."""
    url = f"sqlite:///{tmp_path / 'reference.db'}"
    ingest = _cli(["ingest", str(tmp_path / "production.jsonl"), "--db", url], dict(os.environ))
    assert ingest.wait(60) == 0
    log = tmp_path / "reference.jsonl"
    proc = _cli(
        _run_args(tmp_path, url, "--format", "json"), {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log)}
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    summary = json.loads(out)  # a plain run's summary: stdout holds the JSON alone
    _, results = _results(url)
    assert summary["status"] == "done" and summary["replayed"] == summary["cases"] == len(results)
    assert "marked_done" not in summary
    return results, Counter(_keys(log))


def test_workers_on_one_machine_replay_every_case_once(tmp_path: Path, store_url: str) -> None:
    _setup(tmp_path, store_url, 60)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    args = _run_args(tmp_path, store_url, "--workers", "3", "--concurrency", "4", "--format", "json")
    proc = _cli(args, env)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["status"] == "done" and summary["pending"] == 0
    assert summary["done"] + summary["errors"] == summary["cases"] > 60
    assert summary["replayed"] == summary["cases"]  # the workers' counts added up: every case once

    expected, reference_calls = _reference(tmp_path)
    assert (
        Counter(_keys(log)) == reference_calls
    )  # the very calls one process makes: none skipped, none twice
    runs, results = _results(store_url)
    assert results == expected
    assert runs[0].status == "done" and runs[0].finished_at is not None


def test_workers_started_at_once_share_one_run_and_one_marks_it_done(tmp_path: Path, store_url: str) -> None:
    _setup(tmp_path, store_url, 60)
    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    args = _run_args(tmp_path, store_url, "--workers", "1", "--concurrency", "4", "--format", "json")
    procs = [
        _cli(args, {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "10"})
        for log in logs
    ]
    summaries = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
        summaries.append(json.loads(out))
    assert len({s["run_id"] for s in summaries}) == 1  # found or created under the lock: one run
    assert sorted(s["marked_done"] for s in summaries) == [False, True]  # marked done once
    assert sum(s["replayed"] for s in summaries) == summaries[0]["cases"]

    expected, reference_calls = _reference(tmp_path)
    assert Counter(_keys(logs[0]) + _keys(logs[1])) == reference_calls
    assert _results(store_url)[1] == expected


def test_a_worker_killed_mid_run_loses_nothing_and_the_other_finishes_its_cases(
    tmp_path: Path, store_url: str
) -> None:
    _setup(tmp_path, store_url, 120)
    killed_log, other_log = tmp_path / "killed.jsonl", tmp_path / "other.jsonl"
    worker = ["--workers", "1", "--lease", "2", "--concurrency", "4", "--format", "json"]
    # The worker to kill: every call after its 20th hangs, so it is killed holding calls in flight.
    killed = _cli(
        _run_args(tmp_path, store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(killed_log), "RAGREPLAY_FAKE_HANG_AFTER": "20"},
    )
    deadline = time.monotonic() + 60
    while not _keys(killed_log) and time.monotonic() < deadline:  # it has made the run and claimed cases
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        time.sleep(0.05)
    other = _cli(
        _run_args(tmp_path, store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(other_log), "RAGREPLAY_FAKE_LATENCY_MS": "20"},
    )
    while len(_keys(killed_log)) < 20 and time.monotonic() < deadline:
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)  # its writer saves what its finished calls produced
    store = Store.open(store_url)
    try:
        (run,) = store.runs.list_runs()
        held = {c for c, (w, _) in store.work_claims.claims(run_queue(run.id)).items() if w != "parked"}
    finally:
        store.close()
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    assert held  # it was killed holding claims (its calls in flight at least)

    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["run_id"] == run.id and summary["marked_done"] is True
    assert summary["status"] == "done" and summary["pending"] == 0

    expected, reference_calls = _reference(tmp_path)
    runs, results = _results(store_url)
    assert results == expected  # every case replayed, once, as one process replays it
    assert runs[0].status == "done"
    made = Counter(_keys(killed_log)) + Counter(_keys(other_log))
    assert len(_keys(killed_log)) == 20
    assert not reference_calls - made  # no call skipped
    # only calls of cases the killed worker had not saved are made again: at most its calls in flight
    assert (made - reference_calls).total() <= 4 * 2


def test_ctrl_c_on_the_only_worker_marks_the_run_interrupted_and_a_worker_joining_it_finishes_it(
    tmp_path: Path, store_url: str
) -> None:
    _setup(tmp_path, store_url, 60)
    first_log, second_log = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    worker = ["--workers", "1", "--lease", "2", "--concurrency", "4", "--format", "json"]
    first = _cli(
        _run_args(tmp_path, store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(first_log), "RAGREPLAY_FAKE_HANG_AFTER": "15"},
    )
    deadline = time.monotonic() + 60
    while len(_keys(first_log)) < 15 and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=30)
    assert first.returncode == 130, err.decode()
    assert b"Traceback" not in err
    store = Store.open(store_url)
    try:
        (run,) = store.runs.list_runs()
        assert run.status == "interrupted"  # no other worker was at work
        left = store.work_claims.claims(run_queue(run.id))
        assert all(worker == "parked" for worker, _ in left.values())  # its live claims released at once
        assert store.runs.result_counts(run.id).get("done", 0) > 0
    finally:
        store.close()

    second = _cli(
        _run_args(tmp_path, store_url, *worker, "--run-id", run.id),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(second_log)},
    )
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["marked_done"] is True and summary["status"] == "done"
    expected, reference_calls = _reference(tmp_path)
    assert _results(store_url)[1] == expected
    made = Counter(_keys(first_log)) + Counter(_keys(second_log))
    assert not reference_calls - made and not made - reference_calls  # nothing skipped, nothing paid twice

    # joined again once finished: only its errored cases are tried again (as a plain run does); the target fails
    # them again before any model call (their rewrites are pinned)
    third = _cli(
        _run_args(tmp_path, store_url, *worker), {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(second_log)}
    )
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err.decode()
    again = json.loads(out)
    assert again["replayed"] == again["errors"] == summary["errors"] > 0 and again["status"] == "done"
    assert Counter(_keys(first_log)) + Counter(_keys(second_log)) == made


def test_run_id_and_workers_mistakes_are_refused(tmp_path: Path, store_url: str) -> None:
    _setup(tmp_path, store_url, 6)
    for extra, message in [
        (["--run-id", "run_x"], "--run-id run_x: joins a run as a worker"),
        (["--workers", "1", "--run-id", "run_x"], "--run-id run_x: no such run"),
        (["--workers", "65"], "--workers 65: must be 1 to 64"),
        (["--workers", "2", "--lease", "0"], "--lease 0.0: must be 1 to 3600 seconds"),
    ]:
        proc = _cli(_run_args(tmp_path, store_url, *extra), dict(os.environ))
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err.decode()
        assert message in " ".join(err.decode().split()), err.decode()
        assert b"Traceback" not in err
