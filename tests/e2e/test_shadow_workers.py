"""`shadow judge --workers`: worker processes sharing one store judge every row exactly once, on SQLite and
PostgreSQL; a worker killed with SIGKILL mid-run loses nothing and its rows are finished by the others,
repeating only the calls it had in flight; a worker whose leases ran out has its rows taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from builders import make_shadow_row
from ragreplay.cli.app import main
from ragreplay.core.shadow import ShadowAnswer, ShadowRow
from ragreplay.store import Store
from ragreplay.store.work_claims import SHADOW_JUDGE_QUEUE

NOW = datetime.now(UTC)
CALLS_PER_ROW = 3  # the FIT judge once, the pairwise judge in both orders


def rows(n: int) -> list[ShadowRow]:
    out = []
    for i in range(n):
        champion = f"office {i} gives employees 25 leave days"
        challenger = champion if i % 3 == 0 else f"employees of office {i} get {20 + i % 7} days off"
        out.append(
            make_shadow_row(
                id=f"row{i:04d}",
                ts=NOW - timedelta(minutes=n - i),
                request_id=f"req{i}",
                query=f"how many leave days in office {i}",
                challenger=f"c{i % 2}",
                champion_answer=ShadowAnswer(text=champion, chunk_ids=[f"d{i}"]),
                challenger_answer=ShadowAnswer(text=challenger, chunk_ids=[f"e{i}"]),
            )
        )
    return out


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _keys(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()]


def _judge_args(url: str, *extra: str) -> list[str]:
    return ["shadow", "judge", "--db", url, "--judge", "fake:default", "--since", "7d", *extra]


def _outcomes(url: str) -> dict[str, tuple[object, object, object]]:
    store = Store.open(url)
    try:
        return {
            rec.row_id: (rec.fit, rec.winner, rec.consistent)
            for _, rec in store.shadow_judgments.load_shadow_judgments()
        }
    finally:
        store.close()


def _reference(
    tmp_path: Path, data: list[ShadowRow]
) -> tuple[dict[str, tuple[object, object, object]], set[str]]:
    """The judgments and calls of one plain process judging the same rows in a fresh store."""
    url = f"sqlite:///{tmp_path / 'reference.db'}"
    store = Store.open(url)
    store.shadow_rows.write_shadow_rows(data)
    store.close()
    log = tmp_path / "reference.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log)}
    proc = _cli(_judge_args(url), env)
    assert proc.wait(120) == 0, proc.stderr.read() if proc.stderr else ""
    return _outcomes(url), set(_keys(log))


def test_workers_on_one_machine_judge_every_row_once(tmp_path: Path, store_url: str) -> None:
    data = rows(90)
    store = Store.open(store_url)
    store.shadow_rows.write_shadow_rows(data)
    store.close()
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    proc = _cli(_judge_args(store_url, "--workers", "3", "--concurrency", "4", "--format", "json"), env)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["judged"] == 90 and summary["unjudged_left"] == 0

    keys = _keys(log)
    assert max(Counter(keys).values()) == 1  # no call made twice, by any worker
    expected, reference_keys = _reference(tmp_path, data)
    assert set(keys) == reference_keys  # the very calls one process makes: none skipped, none extra
    assert _outcomes(store_url) == expected
    store = Store.open(store_url)
    try:
        assert store.work_claims.claims(SHADOW_JUDGE_QUEUE) == {}  # every claim released
    finally:
        store.close()


def test_a_worker_killed_mid_run_loses_nothing_and_the_other_finishes_its_rows(
    tmp_path: Path, store_url: str
) -> None:
    data = rows(120)
    store = Store.open(store_url)
    store.shadow_rows.write_shadow_rows(data)
    store.close()
    killed_log, other_log = tmp_path / "killed.jsonl", tmp_path / "other.jsonl"
    worker = ["--workers", "1", "--lease", "2", "--concurrency", "4"]
    # The worker to kill: every call after its 20th hangs, so it is killed holding calls in flight.
    killed = _cli(
        _judge_args(store_url, *worker),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(killed_log), "RAGREPLAY_FAKE_HANG_AFTER": "20"},
    )
    other = _cli(
        _judge_args(store_url, *worker, "--format", "json"),
        {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(other_log), "RAGREPLAY_FAKE_LATENCY_MS": "20"},
    )
    deadline = time.monotonic() + 60
    while len(_keys(killed_log)) < 20 and time.monotonic() < deadline:
        assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
        time.sleep(0.05)
    time.sleep(0.3)  # its writer saves what its finished calls produced
    store = Store.open(store_url)
    try:
        held = store.work_claims.claims(SHADOW_JUDGE_QUEUE)
    finally:
        store.close()
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    assert len(held) > 0  # it was killed holding claims (its calls in flight at least)

    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err.decode()
    assert json.loads(out)["unjudged_left"] == 0

    expected, reference_keys = _reference(tmp_path, data)
    assert _outcomes(store_url) == expected  # every row judged, once, as one process judges it
    killed_keys, other_keys = _keys(killed_log), _keys(other_log)
    assert len(killed_keys) == 20
    assert max(Counter(other_keys).values()) == 1
    assert set(killed_keys) | set(other_keys) == reference_keys
    repeated = set(killed_keys) & set(other_keys)
    # only calls of rows the killed worker had not saved are made again: at most its calls in flight
    assert len(repeated) <= 4 * CALLS_PER_ROW
    store = Store.open(store_url)
    try:
        assert store.work_claims.claims(SHADOW_JUDGE_QUEUE) == {}
        assert store.shadow_judgments.count_unjudged_shadow_rows() == 0
    finally:
        store.close()


def test_rows_held_by_a_worker_that_stopped_renewing_are_taken_over_when_its_leases_end(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.shadow_rows.write_shadow_rows(rows(12))
    stalled = store.work_claims.claim_shadow_rows("stalled", 5, lease_s=1.5)
    assert len(stalled.items) == 5
    started = time.monotonic()
    assert main(_judge_args(store_url, "--workers", "1", "--lease", "5", "--format", "json")) == 0
    assert time.monotonic() - started >= 1.0  # it waited for the stalled worker's leases to end
    assert json.loads(capsys.readouterr().out)["judged"] == 12
    assert store.work_claims.claims(SHADOW_JUDGE_QUEUE) == {}
    assert store.work_claims.renew(SHADOW_JUDGE_QUEUE, "stalled", 60) == 0


def test_bad_workers_and_lease_values_are_refused(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    Store.open(store_url).close()
    assert main(_judge_args(store_url, "--workers", "0")) == 2
    assert "--workers 0: must be 1 to 64" in capsys.readouterr().err
    assert main(_judge_args(store_url, "--workers", "2", "--lease", "0.5")) == 2
    assert "--lease 0.5: must be 1 to 3600 seconds" in capsys.readouterr().err
