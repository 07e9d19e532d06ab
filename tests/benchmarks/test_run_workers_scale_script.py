"""`benchmarks/run_workers_scale.py` run small: a plain run and two workers replay the same cases to done."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_plain_run_and_two_workers_replay_every_case(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run_workers_scale.py"),
            "--db",
            str(tmp_path / "bench.db"),
            "--conversations",
            "8",
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
    assert plain["cases"] == workers["cases"] > 8 and plain["errors"] == workers["errors"]
    assert plain["speed_up"] == 1.0 and workers["cases_per_s"] > 0
