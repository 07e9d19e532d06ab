"""eval_side_by_side.py's DeepEval half: the mock's replies to DeepEval's prompts (faithfulness: truths, claims,
verdicts, reason; G-Eval: steps, score) in the shapes its schemas read, and a tiny run where /tmp/deepeval-venv
exists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import eval_side_by_side as bench  # noqa: E402
import mock_openai_server as mock  # noqa: E402

# the instructions and layout of DeepEval 4.3's templates, shortened (deepeval/metrics/*/templates/*.txt)
TRUTHS = (
    "Based on the given text, please generate a comprehensive list of FACTUAL, undisputed truths, that can "
    "inferred from the provided text.\n**\nIMPORTANT: Please make sure to only return in JSON format, "
    'with the "truths" key as a list of strings. No words or explanation is needed.\n**\n\nText:\n{body}\n\nJSON:\n'
)
CLAIMS = (
    "Based on the given text, please extract a comprehensive list of FACTUAL, undisputed truths, that can inferred "
    'from the provided actual AI output.\nExample JSON:\n{{\n  "claims": ["x"]\n}}\n**\nIMPORTANT: Please make sure to '
    'only return in JSON format, with the "claims" key as a list of strings.\n**\n\nAI Output:\n{body}\n\nJSON:\n'
)
VERDICTS = (
    "Based on the given claims, which is a list of strings, generate a list of JSON objects to indicate whether EACH "
    "claim contradicts any facts in the retrieval context. The JSON will have 2 fields: 'verdict' and 'reason'.\n"
    "**\n\nRetrieval Contexts:\nPolicy 1 grants 5 days.\n\nClaims:\n{body}\n\nJSON:\n"
)
REASON = (
    "Given the faithfulness score, which is a 0-1 score indicating how faithful the `actual output` is to the "
    "retrieval context (higher the better), CONCISELY summarize the contradictions to justify the score.\n\n"
    "Faithfulness Score:\n1.00\n\nContradictions:\n[]\n\nJSON:\n"
)
STEPS = (
    "Given an evaluation criteria which outlines how you should judge the Input, Actual Output, and Expected Output, "
    "generate 3-4 concise evaluation steps based on the criteria below.\n\nEvaluation Criteria:\nDetermine whether "
    'the actual output is factually correct based on the expected output.\n\nExample JSON:\n{\n  "steps": '
    "<list_of_strings>\n}\n**\n\nJSON:\n"
)
SCORE = (
    "You are an evaluator. Given the following evaluation steps, assess the response below and return a JSON object "
    'with two fields:\n\n- `"score"`: an integer between 0 and 10\n\nEvaluation Steps:\n1. Compare.\n\nTest Case:\n'
    'Input:\nq?\n\n---\n**Example JSON:**\n{\n  "reason": "...",\n  "score": 0\n}\n\nJSON: '
)


def _ask(prompt: str) -> tuple[str, dict[str, object]]:
    messages = [{"role": "user", "content": prompt}]
    reply: dict[str, object] = json.loads(mock.reply_for(messages))
    return mock.prompt_kind(messages), reply


def test_mock_answers_deepeval_faithfulness_prompts_sentence_by_sentence() -> None:
    kind, truths = _ask(
        TRUTHS.format(body="Policy 1 grants 5 days. HR approves.\n\nSection 2: records kept.")
    )
    assert kind == "deepeval_truths"
    assert truths == {"truths": ["Policy 1 grants 5 days.", "HR approves.", "Section 2: records kept."]}
    kind, claims = _ask(CLAIMS.format(body="Policy 1 grants 5 days. Requests go to HR."))
    assert kind == "deepeval_claims" and claims == {
        "claims": ["Policy 1 grants 5 days.", "Requests go to HR."]
    }
    kind, verdicts = _ask(VERDICTS.format(body=repr(["Policy 1 grants 5 days.", "HR's team approves.", "x"])))
    assert kind == "deepeval_verdicts"
    assert verdicts == {"verdicts": [{"verdict": "yes", "reason": None}] * 3}
    kind, reason = _ask(REASON)
    assert kind == "deepeval_reason" and isinstance(reason["reason"], str) and reason["reason"]


def test_mock_answers_g_eval_steps_and_a_full_score() -> None:
    kind, steps = _ask(STEPS)
    assert kind == "geval_steps" and isinstance(steps["steps"], list) and len(steps["steps"]) == 3
    kind, score = _ask(SCORE)
    assert kind == "geval_score" and score["score"] == 10 and isinstance(score["reason"], str)


def test_deepeval_kinds_leave_the_other_prompts_alone() -> None:
    assert mock.prompt_kind([{"role": "user", "content": "Return a verdict"}]) == "judge"
    claims_check = "Please list and check the claims of the answer; each verdict is yes or no."
    assert mock.prompt_kind([{"role": "user", "content": claims_check}]) == "claims"


@pytest.mark.slow
@pytest.mark.skipif(
    not bench.DEEPEVAL_PYTHON.exists(), reason=f"no DeepEval virtualenv at {bench.DEEPEVAL_PYTHON}"
)
def test_deepeval_scores_every_row_from_the_mock() -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "eval_side_by_side.py"), "--json", "--rows", "3"]
    command += ["--latency-ms", "5", "--scenario", "open", "--ragas-python", "/absent/python"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    results = json.loads(out.stdout.strip().splitlines()[-1])
    deepeval = next(r for r in results if r["tool"].startswith("DeepEval"))
    assert deepeval["rows"] == deepeval["rows_scored"] == 3 and deepeval["metric_errors"] == {}
    assert deepeval["faithfulness"] == deepeval["answer_correctness"] == 1.0
    assert deepeval["kinds"] == {kind: 3 for kind in mock.DEEPEVAL_KINDS}
    assert "open: ragreplay / DeepEval" in out.stdout
