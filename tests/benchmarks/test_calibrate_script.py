"""The judge calibration script: its statistics, and small runs with the fake judge on both tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import calibrate_judge  # noqa: E402


def run_script(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "calibrate_judge.py"), *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def table(out: str) -> dict[str, str]:
    """The metric -> value rows of the Markdown table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 2 and cells[0] not in ("metric",):
            rows[cells[0]] = cells[1]
    return rows


def test_cohen_kappa() -> None:
    assert calibrate_judge.cohen_kappa(["A", "B", "A", "B"], ["A", "B", "A", "B"]) == 1.0
    # observed 0.5, expected 0.5 -> 0
    assert calibrate_judge.cohen_kappa(["A", "A", "B", "B"], ["A", "B", "A", "B"]) == 0.0
    # observed 5/6; pred A 3/6 B 3/6, gold A 4/6 B 2/6 -> expected 1/2 -> kappa 2/3
    kappa = calibrate_judge.cohen_kappa(list("AABBAB"), list("AAABAB"))
    assert kappa == pytest.approx(2 / 3)
    assert calibrate_judge.cohen_kappa(["A"], ["A"]) is None
    assert calibrate_judge.cohen_kappa([], []) is None


@pytest.mark.skipif(not calibrate_judge.DATASETS["pairwise"].exists(), reason="PandaLM data absent")
def test_pairwise_calibration_with_fake_judge_and_cache(tmp_path: Path) -> None:
    db = str(tmp_path / "cal.db")
    first = run_script("--task", "pairwise", "--judge", "fake:default", "--limit", "30", "--db", db, "--json")
    rows = table(first.stdout)
    assert "`fake:default`" in first.stdout and "pairwise-2." in first.stdout
    n, scored, unscorable = int(rows["n"]), int(rows["scored"]), int(rows["unscorable"])
    assert n == 30 and scored + unscorable == n
    assert sum(int(x) for x in rows["human labels A / B / tie"].split(" / ")) == n
    accuracy = float(rows["accuracy (scored)"].split()[0])
    assert 0.0 <= accuracy <= 1.0
    assert 0.0 <= float(rows["position consistency"]) <= 1.0
    a, b, ties = (int(x) for x in rows["wins by position A / B / tie (per ordering)"].split(" / "))
    assert a + b + ties == 2 * scored  # both orders of each scored pair
    calls, cached = int(rows["model calls"]), int(rows["cached responses"])
    assert calls > 0 and calls + cached == 2 * n
    metrics = json.loads(first.stdout.strip().splitlines()[-1])
    assert metrics["accuracy"] == pytest.approx(accuracy, abs=5e-4) and metrics["position"]["n_pairs"] == n

    again = table(
        run_script("--task", "pairwise", "--judge", "fake:default", "--limit", "30", "--db", db).stdout
    )
    assert again["model calls"] == "0" and again["cached responses"] == str(2 * n)
    assert again["accuracy (scored)"] == rows["accuracy (scored)"]


@pytest.mark.skipif(not calibrate_judge.DATASETS["fit"].exists(), reason="NQ301 data absent")
def test_fit_calibration_with_fake_judge_and_config(tmp_path: Path) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("concurrency: 3\n", encoding="utf-8")
    db = str(tmp_path / "cal.db")
    args = ("--task", "fit", "--judge", "fake:default", "--limit", "30", "--config", str(config), "--db", db)
    rows = table(run_script(*args).stdout)
    assert int(rows["n"]) == 30 and int(rows["scored"]) + int(rows["unscorable"]) == 30
    assert sum(int(x) for x in rows["human labels acceptable / not"].split(" / ")) == 30
    assert 0.0 <= float(rows["accuracy (scored)"].split()[0]) <= 1.0
    assert -1.0 <= float(rows["Cohen's kappa (scored)"]) <= 1.0
    assert int(rows["model calls"]) == 30 and rows["cost (USD)"] == "0.0000"
    assert table(run_script(*args).stdout)["model calls"] == "0"


def test_user_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    missing = run_script(
        "--task", "fit", "--judge", "fake:default", "--data", str(tmp_path / "x.jsonl"), check=False
    )
    assert missing.returncode == 2 and "--data" in missing.stderr and "Traceback" not in missing.stderr
    data = tmp_path / "rows.jsonl"
    data.write_text(
        json.dumps({"id": "1", "question": "q", "answer_a": "x", "answer_b": "y", "label": "A"}) + "\n"
    )
    unknown = run_script("--task", "pairwise", "--judge", "nope", "--data", str(data), check=False)
    assert (
        unknown.returncode == 2 and "provider:model" in unknown.stderr and "Traceback" not in unknown.stderr
    )


def test_pairwise_rows_with_non_text_answers_are_judged_as_text(tmp_path: Path) -> None:
    # PandaLM holds a few answers that are JSON literals (true, 42); they must not crash the run
    rows = [
        {
            "id": "p1",
            "question": "Is water wet?",
            "answer_a": True,
            "answer_b": "Yes, water is wet.",
            "label": "B",
        },
        {"id": "p2", "question": "2 * 21?", "answer_a": 42, "answer_b": "forty-two", "label": "tie"},
    ]
    data = tmp_path / "pairs.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = run_script(
        "--task", "pairwise", "--judge", "fake:default", "--data", str(data), "--db", str(tmp_path / "c.db")
    )
    assert table(out.stdout)["n"] == "2"


def test_fit_calibration_against_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    # the real-endpoint path: a provider from a settings file, over HTTP, with prices, to the loopback mock
    from mock_openai_server import run_in_thread

    base_url, stop = run_in_thread(latency_ms=1)
    try:
        rows = [
            {
                "id": f"n{i}",
                "qid": str(i),
                "question": f"q{i}?",
                "reference": [f"gold {i}"],
                "candidate": f"cand {i}",
                "label": i % 2 == 0,
            }
            for i in range(6)
        ]
        data = tmp_path / "fit.jsonl"
        data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        config = tmp_path / "settings.yaml"
        config.write_text(
            f"providers:\n  mock:\n    base_url: {base_url}\n    max_retries: 0\n"
            "prices:\n  'mock:judge-model': {input_per_mtok: 1.0, output_per_mtok: 2.0}\n",
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if k != "RAGREPLAY_BLOCK_REAL_MODELS"}
        out = subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "calibrate_judge.py"),
                "--task",
                "fit",
                "--judge",
                "mock:judge-model",
                "--config",
                str(config),
                "--data",
                str(data),
                "--db",
                str(tmp_path / "c.db"),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env=env,
        ).stdout
    finally:
        stop()
    result = table(out)
    assert result["n"] == "6" and result["model calls"] == "6"
    assert int(result["scored"]) == 6  # the mock always answers FIT, in JSON
    assert float(result["accuracy (scored)"].split()[0]) == pytest.approx(0.5)
    assert float(result["cost (USD)"]) > 0
