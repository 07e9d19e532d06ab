"""`eval --workers`: worker processes sharing one store score every row of one eval run exactly once, on SQLite
and PostgreSQL, with the same calls and scores as one plain `eval`; a worker killed with SIGKILL mid-run loses
nothing, the other scores its rows (repeating only the calls it had in flight) and finishes the run once; a
worker given another dataset than the run's is refused."""

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

from ragreplay.store import Store
from ragreplay.store.claim_queues import eval_queue


def _default_sigint() -> None:
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


def _dataset(tmp_path: Path, n: int, name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    lines = []
    for i in range(n):
        row = {
            "id": f"r{i:03d}",
            "question": f"What is item {i}?",
            "answer": f"Item {i} is a widget. It is {'blue' if i % 3 else 'red'}.",
            "reference": f"Item {i} is a widget.",
            "contexts": [{"id": "c1", "text": f"Item {i} is a widget."}, {"id": "c2", "text": "Menu"}],
            "judgments": {"c1": 2},
            "tags": ["even" if i % 2 == 0 else "odd"],
        }
        lines.append(json.dumps(row) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _args(data: Path, url: str, *extra: str) -> list[str]:
    # without the model cache every row makes its own calls: the calls made count the rows scored
    return ["eval", str(data), "--judge", "fake:default", "--db", url, "--cache", "off", *extra]


def _comparable(report: dict[str, Any]) -> tuple[Any, Any]:
    """The scores of a JSON report: every row's (timings left out: they are the fake's latency) and the summary
    but its tracing."""
    rows = [{k: v for k, v in r.items() if k != "trace"} for r in report["rows"]]
    summary = {k: v for k, v in report["summary"].items() if k != "tracing"}
    return rows, summary


def _reference(tmp_path: Path, data: Path) -> tuple[tuple[Any, Any], Counter[str]]:
    """The scores and calls of one plain `eval` (one process) of the same rows in a fresh store."""
    log = tmp_path / "reference.jsonl"
    proc = _cli(
        _args(data, f"sqlite:///{tmp_path / 'reference.db'}", "--format", "json"),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log)},
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return _comparable(json.loads(out)), Counter(_keys(log))


def _stored(url: str) -> tuple[Any, list[Any]]:
    """The store's one eval run and its rows; every claim released, none parked."""
    store = Store.open(url)
    try:
        (record,) = store.evals.list_evals()
        rows = store.evals.load_eval_rows(record.id)
        assert store.work_claims.claims(eval_queue(record.id)) == {}
    finally:
        store.close()
    return record, rows


def test_workers_on_one_machine_score_every_row_once(tmp_path: Path, store_url: str) -> None:
    data = _dataset(tmp_path, 60)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    proc = _cli(_args(data, store_url, "--workers", "3", "--concurrency", "2", "--format", "json"), env)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    assert "finished by 3 workers (1 marked it done)" in " ".join(err.decode().split())

    expected, reference_calls = _reference(tmp_path, data)
    assert _comparable(json.loads(out)) == expected  # scores equal a one-process eval's
    assert Counter(_keys(log)) == reference_calls  # the very calls: none skipped, none twice
    record, rows = _stored(store_url)
    assert record.status == "done" and record.finished_at is not None and record.n_rows == 60
    assert len(rows) == 60 and not any(r.error for r in rows)


def test_a_worker_killed_mid_run_loses_nothing_and_the_other_finishes_the_run_once(
    tmp_path: Path, store_url: str
) -> None:
    data = _dataset(tmp_path, 100)
    killed_log, other_log = tmp_path / "killed.jsonl", tmp_path / "other.jsonl"
    worker = ["--workers", "1", "--lease", "2", "--concurrency", "4", "--format", "json"]
    # The worker to kill: every call after its 20th hangs, so it is killed holding calls in flight.
    killed = _cli(
        _args(data, store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(killed_log), "RAGREPLAY_FAKE_HANG_AFTER": "20"},
    )
    deadline = time.monotonic() + 60
    while not _keys(killed_log) and time.monotonic() < deadline:
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        time.sleep(0.05)
    other = _cli(
        _args(data, store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(other_log), "RAGREPLAY_FAKE_LATENCY_MS": "20"},
    )
    while len(_keys(killed_log)) < 20 and time.monotonic() < deadline:
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)  # its writer saves what its finished calls produced
    store = Store.open(store_url)
    try:
        (record,) = store.evals.list_evals()
        held = {r for r, (w, _) in store.work_claims.claims(eval_queue(record.id)).items() if w != "parked"}
    finally:
        store.close()
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    assert held  # it was killed holding claims (its calls in flight at least)

    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err.decode()
    report = json.loads(out)
    assert report["worker"]["eval_id"] == record.id and report["worker"]["marked_done"] is True
    assert report["run"]["status"] == "done"

    expected, reference_calls = _reference(tmp_path, data)
    assert _comparable(report) == expected  # every row scored, as one process scores it
    finished, rows = _stored(store_url)
    assert finished.status == "done" and finished.finished_at is not None
    assert len(rows) == 100 and not any(r.error for r in rows)
    made = Counter(_keys(killed_log)) + Counter(_keys(other_log))
    assert len(_keys(killed_log)) == 20
    assert not reference_calls - made  # no call skipped
    # only the rows the killed worker had not saved are scored again: at most its calls in flight
    assert (made - reference_calls).total() <= 4 * 2

    # the same worker command once it is finished: shown again, no call, not marked again
    again = _cli(_args(data, store_url, *worker), {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(other_log)})
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err.decode()
    shown = json.loads(out)
    assert shown["worker"] == {"eval_id": record.id, "scored": 0, "errors": 0, "marked_done": False}
    assert Counter(_keys(killed_log)) + Counter(_keys(other_log)) == made
    assert _stored(store_url)[0].finished_at == finished.finished_at  # finished once


def test_ctrl_c_on_the_only_worker_marks_the_run_interrupted_and_a_worker_joining_it_finishes_it(
    tmp_path: Path, store_url: str
) -> None:
    data = _dataset(tmp_path, 60)
    first_log, second_log = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    worker = ["--workers", "1", "--lease", "2", "--concurrency", "4", "--format", "json"]
    first = _cli(
        _args(data, store_url, *worker),
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
        (record,) = store.evals.list_evals()
        assert record.status == "interrupted"  # no other worker was at work
        assert store.work_claims.claims(eval_queue(record.id)) == {}  # its claims released at once
        assert 0 < store.evals.unscored(record.id) < 60
    finally:
        store.close()

    second = _cli(
        _args(data, store_url, *worker, "--eval-id", record.id),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(second_log)},
    )
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    report = json.loads(out)
    assert report["worker"]["marked_done"] is True and report["run"]["status"] == "done"
    expected, reference_calls = _reference(tmp_path, data)
    assert _comparable(report) == expected
    made = Counter(_keys(first_log)) + Counter(_keys(second_log))
    assert not reference_calls - made and not made - reference_calls  # nothing skipped, nothing paid twice


def test_worker_mistakes_are_refused(tmp_path: Path, store_url: str) -> None:
    data = _dataset(tmp_path, 4)
    first = _cli(_args(data, store_url, "--workers", "1", "--format", "json"), dict(os.environ))
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err.decode()
    eval_id = json.loads(out)["worker"]["eval_id"]
    other = _dataset(tmp_path, 5, "other.jsonl")
    for args, message in [
        (_args(data, store_url, "--eval-id", eval_id), f"--eval-id {eval_id}: joins an eval run as a worker"),
        (_args(data, store_url, "--workers", "1", "--eval-id", "eval_x"), "There is no eval run 'eval_x'"),
        (_args(data, store_url, "--workers", "65"), "--workers 65: must be 1 to 64"),
        (
            _args(other, store_url, "--workers", "1", "--eval-id", eval_id),
            f"differ from those of eval run {eval_id}",
        ),
    ]:
        proc = _cli(args, dict(os.environ))
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err.decode()
        assert message in " ".join(err.decode().split()), err.decode()
        assert b"Traceback" not in err
    _, rows = _stored(store_url)  # the refused worker added nothing to the run
    assert [r.row_id for r in rows] == [f"r{i:03d}" for i in range(4)] and not any(r.error for r in rows)
