"""`ragreplay run` twice: the second re-shows the finished run without calling the target; --fresh replays."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.demo.sample import build_sample
from ragreplay.store import Store

COUNTING_TARGET = """
from pathlib import Path

CALLS = Path(__file__).with_name("calls.txt")


def answer(question: str) -> str:
    with CALLS.open("a", encoding="utf-8") as out:
        out.write("x")
    return "Parental leave is 16 weeks."
"""
TARGET = "name: counting\ntarget:\n  kind: python\n  function: {module}:answer\n  python_path: ['.']\n"


def _calls(folder: Path) -> int:
    path = folder / "calls.txt"
    return len(path.read_text(encoding="utf-8")) if path.exists() else 0


def test_second_run_reshows_the_finished_run_without_calls(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    build_sample(6).write(tmp_path)
    module = f"counting_rag_{uuid.uuid4().hex}"  # one per test: an imported module stays in sys.modules
    (tmp_path / f"{module}.py").write_text(COUNTING_TARGET, encoding="utf-8")
    (tmp_path / "candidate.yaml").write_text(TARGET.format(module=module), encoding="utf-8")
    assert main(["ingest", str(tmp_path / "production.jsonl"), "--db", store_url]) == 0
    command = [
        "run",
        "--target",
        str(tmp_path / "candidate.yaml"),
        "--judge",
        "fake:default",
        "--db",
        store_url,
    ]
    assert main(command) == 0
    first = capsys.readouterr().out
    n_cases = _calls(tmp_path)
    assert n_cases > 0

    assert main(command) == 0
    second = capsys.readouterr().out
    assert _calls(tmp_path) == n_cases  # zero target calls
    with Store.open(store_url) as store:
        (run,) = store.runs.list_runs()
    assert f"run {run.id} already finished" in second and "--fresh" in second
    table = re.search(r"^run +run_", first, flags=re.M)  # the summary, after the progress bar
    assert table is not None
    summary = first[table.start() :]
    assert summary in second  # the same summary

    assert main([*command, "--fresh"]) == 0
    assert _calls(tmp_path) == 2 * n_cases
    with Store.open(store_url) as store:
        assert len(store.runs.list_runs()) == 2
