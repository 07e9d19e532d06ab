"""The GitHub Action's own shell steps, run here with bash against a real store: the gate step writes the
outputs, the summary and the comment file, and the final step fails the check unless the gate passed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from gates import BAD, GOOD, PASSING, make_set, targets

ACTION = Path(__file__).resolve().parents[2] / "action.yml"


def step(name: str) -> str:
    steps = yaml.safe_load(ACTION.read_text())["runs"]["steps"]
    return next(s["run"] for s in steps if s.get("name") == name)


def substitute(script: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        return values[match.group(1).strip()]

    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", value, script)


def run_action(
    tmp_path: Path, plan: dict, extra: str = "", allow_inconclusive: str = "false"
) -> tuple[int, dict[str, str]]:  # type: ignore[type-arg]
    db = f"sqlite:///{tmp_path / 'gate.db'}"
    champion, challenger = targets(tmp_path, make_set(db, plan))
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    values = {
        "inputs.champion": str(champion),
        "inputs.challenger": str(challenger),
        "inputs.judge": "fake:default",
        "inputs.set": "latest",
        "inputs.db": db,
        "inputs.extra-args": extra,
        "inputs.allow-inconclusive": allow_inconclusive,
    }
    env = {
        **os.environ,
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RR_POLICY": "",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    subprocess.run(
        ["bash", "-c", substitute(step("Gate"), values)], cwd=tmp_path, env=env, check=True, timeout=120
    )
    found = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    values.update({f"steps.gate.outputs.{k}": v for k, v in found.items()})
    decided = subprocess.run(
        ["bash", "-c", substitute(step("Decide the check"), values)], cwd=tmp_path, timeout=30
    )
    assert (tmp_path / "ragreplay-gate.md").read_text().startswith("<!-- ragreplay-gate -->")
    assert "ragreplay gate" in summary.read_text() and (tmp_path / "ragreplay-gate.xml").exists()
    return decided.returncode, found


def test_a_passing_gate_passes_the_check(tmp_path: Path) -> None:
    code, outputs = run_action(tmp_path, PASSING)
    assert code == 0 and outputs == {"exit-code": "0", "decision": "pass"}


def test_a_failing_gate_fails_the_check_with_its_code(tmp_path: Path) -> None:
    code, outputs = run_action(tmp_path, {**PASSING, "win": [(GOOD, BAD), *PASSING["win"][1:]]})
    assert code == 1 and outputs["decision"] == "fail"


def test_inconclusive_fails_unless_allowed(tmp_path: Path) -> None:
    plan = {**PASSING, "contested": [(BAD, GOOD)] * 7 + [(GOOD, BAD)] * 3}
    code, outputs = run_action(tmp_path / "strict", plan)
    assert code == 2 and outputs["decision"] == "inconclusive"
    code, _ = run_action(tmp_path / "lenient", plan, allow_inconclusive="true")
    assert code == 0
