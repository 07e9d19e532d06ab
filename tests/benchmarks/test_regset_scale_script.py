"""benchmarks/regset_scale.py, run small: it makes a store of judged shadow rows, and one build per design
reports the same items where phase one samples nothing, and a sampled stratum where it does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "regset_scale.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The script with ``args``, this interpreter, the checkout's source first."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        },
    )


def test_make_then_measure_both_designs(tmp_path: Path) -> None:
    db = str(tmp_path / "shadow.db")
    made = run("make", "--rows", "12000", "--db", db)
    assert made.returncode == 0, made.stderr
    figures = {}
    for design in ("two-phase", "exact"):
        done = run("measure", "--db", db, "--design", design, "--days", "30")
        assert done.returncode == 0, done.stderr
        figures[design] = json.loads(done.stdout)
    two, exact = figures["two-phase"], figures["exact"]
    assert two["candidates"] == exact["candidates"] == 12000
    assert two["items"] == exact["items"] == 200
    kept, held = two["phase_one"]["wound"]
    assert kept == 600 < held  # the wounds' stratum is sampled (600 = 10 x its quota of 60)
    assert two["peak_rss_mb"] > 0 and two["wall_s"] > 0
