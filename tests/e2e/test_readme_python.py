"""The README's Python snippets run as written (in a folder holding the files they name)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragreplay.demo.sample import build_sample

README = Path(__file__).resolve().parents[2] / "README.md"
TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


def python_snippets(text: str) -> list[str]:
    """The code of every fenced ```python block of ``text``."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def expected_output(code: str) -> list[str]:
    """What a snippet prints when it works: the metrics it asks for, else the run's Markdown report."""
    if "llm_metrics" in code:
        return ["'token_f1': 0.8", "'nDCG@10': 0.76", "faithfulness 0.5"]
    return ["## Verdicts"]


def test_the_readme_has_python_snippets() -> None:
    snippets = python_snippets(README.read_text(encoding="utf-8"))
    assert snippets and all("import ragreplay" in s for s in snippets)


@pytest.mark.parametrize("index", range(len(python_snippets(README.read_text(encoding="utf-8")))))
def test_readme_python_snippet_runs_as_written(index: int, tmp_path: Path) -> None:
    sample = build_sample(12)
    sample.write(tmp_path)
    (tmp_path / "production.jsonl").rename(tmp_path / "logs.jsonl")
    (tmp_path / "candidate.yaml").write_text(TARGET, encoding="utf-8")
    code = python_snippets(README.read_text(encoding="utf-8"))[index]
    # a fresh interpreter: the failure it guards against depends on what was imported before
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    for shown in expected_output(code):
        assert shown in done.stdout
