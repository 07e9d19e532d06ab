"""benchmarks/metric_references.py, the script behind docs/eval.md's agreement figures: a small run on the real
pairs (skipped without shared/data), and its message when the data is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shared_data import ANSWER_FIT, require_shared_data

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "metric_references.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The script with ``args``, this interpreter and environment (the source on PYTHONPATH as given)."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        },
    )


def test_a_small_run_counts_every_pair_equal_to_its_reference() -> None:
    folder = require_shared_data(*ANSWER_FIT)
    done = run("--data", str(folder), "--limit", "60")
    assert done.returncode == 0, done.stderr
    lines = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("| `")}
    assert "120 rows" in done.stdout
    for exact in ("`token_f1`", "`exact_match`", '`rouge_l(tokenizer="rouge-score")`'):
        equal = lines[exact].split("|")[3].strip()  # "N of N"
        first, _, second = equal.partition(" of ")
        assert first == second and int(first.replace(",", "")) > 100, lines[exact]


def test_missing_data_is_said_not_raised(tmp_path: Path) -> None:
    done = run("--data", str(tmp_path))
    assert done.returncode == 2 and "answer-fit data not found" in done.stderr
