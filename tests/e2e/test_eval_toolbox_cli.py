"""The evaluation toolbox end to end on SQLite with the fake judge: `eval --rubric` (the shipped example rubric,
grades in every format), `eval --repeats` (one distinct call per row, repeat and task; the variance; resumed
after a SIGKILL without a call paid twice), the flag and rubric mistakes (exit 2, nothing written), and
`eval-diff` (figures against scipy, unknown ids and runs sharing no row: exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from e2e.test_eval_cli import ROWS, write_rows
from ragreplay.cli.app import main

EXAMPLE_RUBRIC = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rubric.yaml"
CRITERIA = ("completeness", "grounding", "actionability", "concision")


def _keys(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()]


def _json_run(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_rubric_and_repeats_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(log))
    data = write_rows(tmp_path / "rows.jsonl", ROWS)
    args = ["eval", str(data), "--judge", "fake:default", "--db", str(tmp_path / "e.db")]
    args += ["--rubric", str(EXAMPLE_RUBRIC), "--repeats", "3"]
    report = _json_run(args, capsys)
    metrics = {m["name"]: m for m in report["summary"]["metrics"]}
    for name in CRITERIA:
        assert metrics[f"rubric.{name}"]["n"] == 2
    assert metrics["rubric.overall"]["n"] == 2
    # 2 rows x 3 repeats x (claims + rubric): each a call of its own key, none answered twice
    keys = _keys(log)
    assert len(keys) == 12 and len(set(keys)) == 12
    assert all(r["calls"] == 6 for r in report["rows"])
    first = report["rows"][0]
    assert set(first["rubric"]) == set(CRITERIA) and first["rubric"]["grounding"]["reasoning"]
    assert len(first["repeats"]) == 3
    variance = {v["name"]: v for v in report["summary"]["variance"]}
    assert (
        variance["answer_relevance"]["repeats"] == 3 and len(variance["rubric.overall"]["repeat_means"]) == 3
    )
    relevance = [s["answer_relevance"]["value"] for s in first["repeats"]]
    assert first["metrics"]["answer_relevance"]["value"] == pytest.approx(np.mean(relevance))
    config = report["run"]["config"]
    assert config["repeats"] == 3 and config["rubric"]["name"] == "hr-assistant"
    # the same command shows the run again: no new call
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "shown again from the store" in text and len(_keys(log)) == 12
    assert "rubric, on the judge's 1-5 scale" in text and "run-to-run variance over 3 repeats" in text
    mean = metrics["rubric.completeness"]["mean"]
    assert f"{1 + 4 * mean:.2f}" in text.split("rubric, on the judge's 1-5 scale")[1]
    # another rubric is another run, not a resumed one
    rubric = tmp_path / "one.yaml"
    rubric.write_text(
        "criteria:\n  - name: tone\n    description: Polite?\n    scores: {1: rude, 3: neutral, 5: kind}\n"
    )
    other = _json_run([*args[:-4], "--rubric", str(rubric)], capsys)
    assert other["run"]["id"] != report["run"]["id"] and "rubric.tone" in json.dumps(other["summary"])


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--rubric", "RUBRIC"], "--rubric needs a judge"),
        (["--judge", "fake:default", "--repeats", "0"], "--repeats 0: choose a number from 1 to 20"),
        (["--repeats", "2"], "--repeats scores the judged metrics again"),
        (["--judge", "fake:default", "--rubric", "BAD"], "bad.yaml:3: field 'criteria[0].scores' say what 5"),
    ],
)
def test_flag_and_rubric_mistakes_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    data = write_rows(tmp_path / "rows.jsonl", ROWS)
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - name: tone\n    scores: {1: rude, 3: neutral}\n    description: x\n")
    extra = [str(EXAMPLE_RUBRIC) if e == "RUBRIC" else str(bad) if e == "BAD" else e for e in extra]
    db = tmp_path / "e.db"
    assert main(["eval", str(data), "--db", str(db), *extra]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "Traceback" not in err
    assert not db.exists()


def test_repeats_resume_after_sigkill_without_a_second_call(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"q{i}",
            "question": f"How many leave days does team {i} get?",
            "answer": f"Team {i} gets {20 + i} leave days.",
            "contexts": [{"id": f"d{i}", "text": f"Team {i} gets {20 + i} leave days a year."}],
        }
        for i in range(10)
    ]
    data = write_rows(tmp_path / "rows.jsonl", rows)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    args = [sys.executable, "-m", "ragreplay.cli.app", "eval", str(data), "--judge", "fake:default"]
    args += ["--db", str(tmp_path / "e.db"), "--repeats", "3", "--rubric", str(EXAMPLE_RUBRIC)]
    first = subprocess.Popen(
        [*args, "--concurrency", "2"],
        env={**env, "RAGREPLAY_FAKE_HANG_AFTER": "25"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(_keys(log)) < 25 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the writer flushes the finished rows and cache entries
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert len(_keys(log)) == 25
    second = subprocess.run([*args, "--format", "json"], env=env, capture_output=True, timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    report = json.loads(second.stdout)
    assert report["summary"]["rows"] == 10 and report["summary"]["errors"] == 0
    keys = _keys(log)
    assert len(keys) == 60 and len(set(keys)) == 60  # 10 rows x 3 repeats x 2 calls, each made once
    assert "resuming eval run" in second.stderr.decode()


def test_eval_diff_figures_are_scipys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = [
        {
            "id": f"q{i}",
            "question": f"How many leave days does team {i} get?",
            "answer": f"Team {i} gets {20 + i} days." if i % 3 else "Ask your manager.",
            "reference": f"Team {i} gets {20 + i} leave days.",
        }
        for i in range(12)
    ]
    better = [{**r, "answer": f"Team {i} gets {20 + i} leave days."} for i, r in enumerate(base)]
    db = str(tmp_path / "e.db")
    run_a = _json_run(["eval", str(write_rows(tmp_path / "a.jsonl", base)), "--db", db], capsys)
    rows_b = [*better[2:], {**better[0], "id": "extra"}]
    run_b = _json_run(["eval", str(write_rows(tmp_path / "b.jsonl", rows_b)), "--db", db], capsys)
    id_a, id_b = run_a["run"]["id"], run_b["run"]["id"]
    diff = _json_run(["eval-diff", id_a, id_b, "--db", db], capsys)
    assert (diff["paired"], diff["only_a"], diff["only_b"], diff["errored"]) == (10, 2, 1, 0)
    token_f1 = next(m for m in diff["metrics"] if m["name"] == "token_f1")
    a = {r["row_id"]: r["metrics"]["token_f1"]["value"] for r in run_a["rows"]}
    b = {r["row_id"]: r["metrics"]["token_f1"]["value"] for r in run_b["rows"]}
    ids = [i for i in a if i in b]
    xs, ys = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
    reference = stats.permutation_test(
        (xs, ys),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert token_f1["n"] == 10 and token_f1["diff"] == pytest.approx(float(np.mean(ys - xs)))
    assert token_f1["p_value"] == pytest.approx(reference.pvalue, abs=1e-12)
    assert token_f1["cohen_dz"] == pytest.approx(stats.ttest_rel(ys, xs).statistic / np.sqrt(10))
    assert token_f1["low"] <= token_f1["diff"] <= token_f1["high"]
    assert main(["eval-diff", id_a, id_b, "--db", db, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"# eval-diff: B {id_b} minus A {id_a}") and "| token_f1 | 10 | 0 |" in md
    assert main(["eval-diff", id_a, "eval_nope", "--db", db]) == 2
    assert "RUN_B 'eval_nope': no eval run" in " ".join(capsys.readouterr().err.split())
    lone = _json_run(
        ["eval", str(write_rows(tmp_path / "c.jsonl", [{**base[0], "id": "zz"}])), "--db", db], capsys
    )
    assert main(["eval-diff", id_a, lone["run"]["id"], "--db", db]) == 2
    assert "share no row id" in " ".join(capsys.readouterr().err.split())
