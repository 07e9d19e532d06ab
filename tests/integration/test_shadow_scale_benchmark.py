"""`benchmarks/shadow_scale.py` runs end to end on a small store: make, measure (pages, report, purge)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "shadow_scale.py"


def test_make_and_measure_a_small_store(tmp_path: Path) -> None:
    db = str(tmp_path / "small.db")
    made = subprocess.run(
        [sys.executable, str(SCRIPT), "make", "--rows", "400", "--db", db],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert json.loads(made.stdout.splitlines()[-1])["rows"] == 400
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "measure", "--db", db, "--purge"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    pages = result["dashboard"]
    assert all(v == 200 for k, v in pages.items() if k.endswith("_status"))
    assert 0 < pages["index_json_bytes"] < 200_000  # figures only: the rows are paged at /rows.json
    assert (
        result["report_text"]["bytes"] > 0 and result["report_json"]["bytes"] > result["report_text"]["bytes"]
    )
    assert result["purge_month"]["wall_s"] > 0
