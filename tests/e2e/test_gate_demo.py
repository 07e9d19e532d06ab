"""`ragreplay gate-demo`: shadow traffic -> regression set -> gate on the shipped data, offline, one command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragreplay.store import Store


@pytest.mark.slow
def test_the_whole_loop_decides_offline(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = [sys.executable, "-m", "ragreplay.cli.app", "gate-demo", "--out", str(out), "--accept-local-judge"]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", "PATH": ""}
    )
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    headline = "PASS" if done.returncode == 0 else "FAIL"
    assert f"{headline}: the challenger may" in done.stdout and "Traceback" not in done.stderr
    with Store.open(str(out / "shadow.db")) as store:
        (regset,) = store.regsets.list_sets()
        (gate,) = store.gates.list_gates()
        judged = store.shadow_judgments.count_unjudged_shadow_rows()
    assert judged == 0 and gate.set_id == regset.id and gate.status == "done"
    assert gate.n_items == sum(regset.counts.values()) > 0
    assert set(regset.counts) == {"win", "contested", "wound"}
    assert (out / "gate-report.md").read_text().startswith("<!-- ragreplay-gate -->")
