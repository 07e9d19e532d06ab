"""ragas_side_by_side.py: a tiny run (ragreplay's half; RAGAS's only where /tmp/ragas-venv exists) and the
mock's RAGAS replies and embeddings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mock_openai_server as mock  # noqa: E402
import ragas_side_by_side as sbs  # noqa: E402


def _prompt(instruction: str, data: dict[str, object]) -> list[dict[str, object]]:
    text = f"{instruction}\n...\nNow perform the same with the following input\ninput: {json.dumps(data)}\nOutput: "
    return [{"role": "user", "content": text}]


def test_mock_answers_ragas_prompts_in_their_shapes() -> None:
    statements = _prompt(
        "Given a question and an answer, analyze the complexity of each sentence in the answer. Break down each "
        "sentence into one or more fully understandable statements.",
        {"question": "q?", "answer": "A is 1. B is 2."},
    )
    assert mock.prompt_kind(statements) == "ragas_statements"
    assert json.loads(mock.reply_for(statements)) == {"statements": ["A is 1.", "B is 2."]}
    nli = _prompt(
        "Your task is to judge the faithfulness of a series of statements based on a given context. ... verdict",
        {"context": "c", "statements": ["A is 1."]},
    )
    assert json.loads(mock.reply_for(nli))["statements"] == [
        {"statement": "A is 1.", "reason": "mock", "verdict": 1}
    ]
    correctness = _prompt(
        "Given a ground truth and an answer statements, analyze each statement and classify them in one of the "
        "following categories: TP (true positive): ...",
        {"question": "q?", "answer": ["A is 1."], "ground_truth": ["A is 1."]},
    )
    reply = json.loads(mock.reply_for(correctness))
    assert reply["FP"] == reply["FN"] == [] and [s["statement"] for s in reply["TP"]] == ["A is 1."]
    assert mock.prompt_kind([{"role": "user", "content": "Return a verdict"}]) == "judge"


def test_embeddings_are_deterministic_unit_vectors() -> None:
    first, again = mock.embedding_for("Policy 3 grants days"), mock.embedding_for("policy 3 grants days")
    assert first == again and len(first) == 64
    assert sum(v * v for v in first) == pytest.approx(1.0)
    assert first != mock.embedding_for("something else entirely")


def test_ideal_wall_counts_the_burst_and_one_latency() -> None:
    assert sbs.ideal_wall(300, 20.0, 0.1) == pytest.approx(14.1)
    assert sbs.ideal_wall(10, 20.0, 0.1) == pytest.approx(0.1)


def test_job_errors_counts_ragas_failed_jobs_by_exception() -> None:
    log = "ERROR:ragas.executor:Exception raised in Job[12]: RateLimitError(Error code: 429)\n"
    log += "Exception raised in Job[3]: RateLimitError(x)\nException raised in Job[4]: TimeoutError()"
    assert sbs.job_errors(log) == {"RateLimitError": 2, "TimeoutError": 1}


@pytest.mark.slow
def test_side_by_side_runs_ragreplay_half(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "ragas_side_by_side.py"), "--rows", "6", "--json"]
    command += ["--latency-ms", "5", "--error-rate", "0"]
    if not sbs.RAGAS_PYTHON.exists():
        print(f"RAGAS half skipped: no virtualenv at {sbs.RAGAS_PYTHON} (RAGAS is not installed in CI)")
    else:  # keep the test to ragreplay's half even where the RAGAS virtualenv exists
        command += ["--ragas-python", str(tmp_path / "absent" / "python")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=180, check=True, cwd=ROOT)
    assert "RAGAS skipped" in out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert [r["tool"] for r in results] == ["ragreplay"]
    (own,) = results
    assert own["rows"] == own["rows_scored"] == 6
    assert own["requests"] == 9 and own["kinds"] == {"judge": 6, "rewrite": 3}
    assert own["words"] > 0 and own["rejected"] == 0
    assert "| ragreplay | 6 | 6 |" in out.stdout
