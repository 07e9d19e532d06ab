"""`ragreplay eval` end to end on SQLite with the fake judge: the report in every format, input mistakes named by
file, line, field and fix (exit 2), a SIGKILLed run resumed without repeating a call, eval-report and evals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragreplay.cli.app import main

ROWS = [
    {
        "id": "q1",
        "question": "When does the office open?",
        "answer": "The office opens at nine. Parking is free.",
        "reference": "The office opens at nine. It closes at five.",
        "contexts": [
            {"id": "c1", "text": "The office opens at nine every weekday."},
            {"id": "c2", "text": "Menu"},
        ],
        "judgments": {"c1": 2},
        "tags": ["hr"],
    },
    {
        "id": "q2",
        "question": "Who approves travel?",
        "answer": "Your manager approves travel.",
        "contexts": [],
        "tags": {"dept": "finance"},
    },
]


def write_rows(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_reports_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_rows(tmp_path / "rows.jsonl", ROWS)
    db = str(tmp_path / "eval.db")
    assert main(["eval", str(data), "--judge", "fake:default", "--db", db, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    metrics = {m["name"]: m for m in report["summary"]["metrics"]}
    assert metrics["faithfulness"]["n"] == 1 and metrics["faithfulness"]["undetermined"] == 1
    assert metrics["faithfulness"]["mean"] == pytest.approx(0.5)
    assert metrics["faithfulness"]["reasons"] == {"no contexts": 1}
    assert metrics["correctness"]["reasons"] == {"no reference": 1}
    assert metrics["nDCG@10"]["n"] == 1 and metrics["bleu"]["n"] == 1
    assert set(report["summary"]["per_tag"]) == {"hr", "dept=finance"}
    assert [r["row_id"] for r in report["rows"]] == ["q1", "q2"] and report["rows"][0]["calls"] == 1
    assert main(["eval", str(data), "--judge", "fake:default", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "shown again from the store" in text and "faithfulness" in text and "tag hr" in text
    assert "undetermined:" in text and "no contexts" in text
    eval_id = report["run"]["id"]
    assert main(["eval-report", eval_id[:12], "--db", db, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"# eval run {eval_id}") and "| faithfulness | 1 | 1 | 0.500 |" in md
    assert main(["evals", "--db", db]) == 0 and eval_id in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "q9", "question": "x"}', "rows.jsonl:2: field 'answer' is missing"),
        (
            '{"id": "q9", "question": "x", "answer": "y", "contexts": [{"id": "c"}]}',
            "field 'contexts[0].text'",
        ),
        ('{"id": "q9", "question": "x", "answer": "y", "judgments": {"c": -1}}', "field 'judgments.c'"),
        ('{"id": "q1", "question": "x", "answer": "y"}', "'q1' is also the id of line 1"),
        ('{"id": "q9", "question": "x", "answer": "y", "contxts": []}', "field 'contxts' is not a field"),
        ("{not json", "rows.jsonl:2: is not valid JSON"),
    ],
)
def test_input_mistakes_name_file_line_field_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, expected: str
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n" + line + "\n", encoding="utf-8")
    assert main(["eval", str(data), "--judge", "fake:default", "--db", str(tmp_path / "e.db")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "Fix:" in err


def test_missing_file_and_bad_format_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "nope.jsonl"), "--db", str(tmp_path / "e.db")]) == 2
    assert "file not found" in capsys.readouterr().err
    data = write_rows(tmp_path / "rows.jsonl", ROWS)
    assert main(["eval", str(data), "--format", "pdf", "--db", str(tmp_path / "e.db")]) == 2


def _calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()]


def test_sigkill_then_resume_repeats_no_call(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"q{i}",
            "question": f"How many leave days does team {i} get?",
            "answer": f"Team {i} gets {20 + i} leave days.",
            "reference": f"Team {i} gets {20 + i} days.",
            "contexts": [{"id": f"d{i}", "text": f"Team {i} gets {20 + i} leave days a year."}],
        }
        for i in range(30)
    ]
    data = write_rows(tmp_path / "rows.jsonl", rows)
    log = tmp_path / "calls.jsonl"
    db = str(tmp_path / "eval.db")
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    args = [
        sys.executable,
        "-m",
        "ragreplay.cli.app",
        "eval",
        str(data),
        "--judge",
        "fake:default",
        "--db",
        db,
    ]
    first = subprocess.Popen(
        [*args, "--concurrency", "4"],
        env={**env, "RAGREPLAY_FAKE_HANG_AFTER": "12"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(_calls(log)) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the writer flushes the finished rows
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert len(_calls(log)) == 12
    second = subprocess.run([*args, "--format", "json"], env=env, capture_output=True, timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    report = json.loads(second.stdout)
    assert report["summary"]["rows"] == 30 and report["summary"]["errors"] == 0
    keys = _calls(log)
    assert len(keys) == 30 and len(set(keys)) == 30  # every row's call made once over both attempts
    assert "resuming eval run" in second.stderr.decode()
