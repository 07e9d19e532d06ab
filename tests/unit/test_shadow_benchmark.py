"""A small run of benchmarks/shadow_overhead.py: no champion errors and every row accounted for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_shadow_overhead_benchmark_runs_and_rows_add_up() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "shadow_overhead.py"),
            "--requests",
            "300",
            "--timeout",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["champion_errors"] == 0 and result["rows_add_up"] is True
    stats = result["stats"]
    assert stats["sampled"] == 300 and stats["rows_written"] == 600 == result["rows_in_store"]
    assert stats["challenger_timeouts"] == 6 and stats["challenger_errors"] > 0
