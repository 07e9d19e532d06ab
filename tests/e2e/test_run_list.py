"""`ragreplay runs` and `sources` at 80 columns: ids, dates and headers whole; a killed run shows as stale."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ragreplay.cli.report_cmd import STALE, shown_status
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.store import Store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _run(run_id: str, created_at: datetime) -> RunRecord:
    return RunRecord(
        id=run_id,
        created_at=created_at,
        status=RunStatus.RUNNING,
        target_name="candidate-hybrid-recency-with-a-long-name",
        target_version="tv1",
        judge_name="openai:gpt-4.1-mini-2025-04-14",
        judge_prompt_version="fit-v1",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="cfg1",
        dataset_hash="ds1",
        n_cases=1,
    )


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    return done.stdout


def test_runs_fit_80_columns_and_a_killed_run_is_stale(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    killed = "run_20261101_090000_dead"
    live = "run_20261201_115959_a1b2"
    with Store.open(db) as store:
        store.runs.create_run(_run(killed, datetime.now(UTC) - timedelta(hours=3)), [])  # no heartbeat since
        store.runs.create_run(_run(live, datetime.now(UTC)), ["case_1"])
    out = _cli("runs", "--db", db)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    header = next(line for line in lines if line.startswith("run "))
    assert header.split()[:5] == ["run", "created", "status", "done", "err"]  # no header cut in two
    row = {line.split()[0]: line.split() for line in lines if line.startswith("run_")}
    assert row[killed][3] == STALE and row[live][3] == "running"  # ids whole, dates on one line
    assert "The same `ragreplay run` command resumes it." in " ".join(out.split())


def test_sources_fit_80_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    log = tmp_path / "a-log-with-a-rather-long-file-name-to-show-folding.jsonl"
    log.write_text(
        '{"id": "c1", "messages": [{"role": "human", "content": "Q?"},'
        ' {"role": "ai", "content": "A.", "feedback": "good"}]}\n',
        encoding="utf-8",
    )
    _cli("ingest", str(log), "--db", db)
    out = _cli("sources", "--db", db)
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "ingested" in out.split() and "format" in out.split()


def test_shown_status() -> None:
    quiet_for = NOW - timedelta(minutes=11)
    assert shown_status(RunStatus.RUNNING, quiet_for, NOW) == STALE
    assert shown_status(RunStatus.RUNNING, NOW - timedelta(minutes=2), NOW) == "running"
    assert shown_status(RunStatus.DONE, quiet_for, NOW) == "done"
    assert shown_status(RunStatus.INTERRUPTED, quiet_for, NOW) == "interrupted"
