"""What the commands print beside their results: progress lines when stderr is a pipe (a CI log, `2>file`),
nothing but results and errors under `--quiet`, debug log lines under `--verbose`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragreplay.cli.app import main

CASES = [
    ("c1", "How many leave days do I get?", "You get 25 leave days per year.", "good"),
    ("c2", "When is the bonus paid?", "The bonus is paid in March.", "bad"),
    ("c3", "Can I work from home?", "Yes, up to three days a week.", "good"),
    ("c4", "What is the notice period?", "One month.", "bad"),
]


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is valid YAML
    return path


def _fixture(tmp: Path, latency_ms: float = 0.0) -> tuple[Path, Path, Path]:
    log = tmp / "log.jsonl"
    lines = [
        {
            "id": cid,
            "messages": [{"role": "human", "content": q}, {"role": "ai", "content": a, "feedback": fb}],
        }
        for cid, q, a, fb in CASES
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = {"kind": "fake", "echo_old_answer": True, "latency_ms": latency_ms}
    champion = _write(tmp / "champion.json", {"name": "prod", "target": target})
    challenger = _write(tmp / "new.json", {"name": "new", "target": {**target, "echo_old_answer": False}})
    return log, champion, challenger


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "COLUMNS": "100", **extra}


def test_piped_compare_prints_a_start_line_and_progress_while_it_runs(tmp_path: Path) -> None:
    log, champion, challenger = _fixture(tmp_path, latency_ms=500)
    command = [sys.executable, "-m", "ragreplay.cli.app", "compare", "--champion", str(champion)]
    command += ["--challenger", f"new={challenger}", "--cases", str(log), "--judge", "fake:default"]
    command += ["--db", str(tmp_path / "s.db"), "--concurrency", "1", "--format", "json"]
    env = _env(RAGREPLAY_PROGRESS_EVERY_S="0")
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        first = proc.stderr.readline()
        assert first.startswith("comparing 1 challenger(s): started, 0/4"), first
        progress = proc.stderr.readline()
        running = proc.poll() is None  # three more cases of 0.5 s each to go
        rest = proc.stderr.read()
        out = proc.stdout.read()
    assert proc.returncode == 0, rest
    assert progress.startswith("comparing 1 challenger(s): 1/4 (25%), "), progress
    assert "/s, ETA " in progress and "$0.0000 so far" in progress and "elapsed" in progress
    assert running, "the first progress line came only at the end"
    assert "4/4 (100%)" in rest.splitlines()[-1]
    assert json.loads(out)["n_cases"] == 4  # stdout holds the report alone


def _run_args(tmp_path: Path) -> list[str]:
    log, _, challenger = _fixture(tmp_path)
    db = str(tmp_path / "s.db")
    assert main(["--quiet", "ingest", str(log), "--db", db]) == 0
    return ["run", "--target", str(challenger), "--judge", "fake:default", "--db", db]


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ragreplay.cli.app", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=_env(**env))


def test_piped_run_prints_a_start_line_and_its_last_counts(tmp_path: Path) -> None:
    done = _cli(*_run_args(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("replay: started, 0/4"), done.stderr
    assert lines[-1].startswith("replay: 4/4 (100%), ") and "$0.0000 so far" in lines[-1], done.stderr
    assert "replay" not in done.stdout.split("run ", 1)[0]  # no bar left in the report on stdout


def test_quiet_run_prints_the_summary_and_no_progress(tmp_path: Path) -> None:
    args = _run_args(tmp_path)
    done = _cli("--quiet", *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress, no informational line
    assert "started run" not in done.stdout and "full report" not in done.stdout
    assert "judged/done" in done.stdout  # the result itself
    again = _cli("--quiet", *args)  # shown again from the store: still no informational line
    assert again.returncode == 0 and again.stderr == "" and "already finished" not in again.stdout
    missing = _cli("--quiet", "runs", "--db", str(tmp_path / "nope.db"))
    assert missing.returncode == 2 and "error:" in missing.stderr  # errors and exit codes unchanged


def test_verbose_run_shows_debug_log_lines(tmp_path: Path) -> None:
    done = _cli("--verbose", *_run_args(tmp_path))
    assert done.returncode == 0, done.stderr
    assert " DEBUG ragreplay.cli: opened the store at " in done.stderr, done.stderr
    assert " DEBUG ragreplay.cli: run run_" in done.stderr


def test_quiet_and_verbose_together_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragreplay.cli.common import OUTPUT

    assert main(["--quiet", "--verbose", "sources"]) == 2
    assert "--quiet and --verbose: choose one" in capsys.readouterr().err
    assert main(["--quiet", "sources", "--db", str(tmp_path / "s.db")]) == 2  # a missing store: still said
    assert "error:" in capsys.readouterr().err and OUTPUT.quiet
    main(["sources", "--db", str(tmp_path / "s.db")])
    assert not OUTPUT.quiet  # each invocation sets the mode again


def test_an_unexpected_error_is_one_line_and_its_traceback_under_verbose(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from ragreplay.cli import report_cmd

    def broken(*_: object, **__: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(report_cmd, "settings_from", broken)
    assert main(["sources"]) == 1
    err = capsys.readouterr().err
    assert "unexpected KeyError: 'boom'" in err and "--verbose" in err and "Traceback" not in err
    assert main(["--verbose", "sources"]) == 1
    assert "Traceback" in capsys.readouterr().err
