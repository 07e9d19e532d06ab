"""`benchmarks/eval_workers_scale.py` run small: a plain eval and two workers score the same rows to done."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_plain_eval_and_two_workers_score_every_row(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "eval_workers_scale.py"),
            "--db",
            str(tmp_path / "bench.db"),
            "--rows",
            "30",
            "--latency-ms",
            "10",
            "--workers",
            "0",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    plain, workers = (json.loads(line) for line in out.splitlines())
    assert (plain["workers"], workers["workers"]) == (0, 2)
    assert plain["status"] == workers["status"] == "done"
    assert plain["rows"] == workers["rows"] == 30 and plain["errors"] == workers["errors"] == 0
    assert plain["speed_up"] == 1.0 and workers["rows_per_s"] > 0
