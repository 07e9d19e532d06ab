"""eval_side_by_side.py: the mock's reply to ragreplay's claims check, the rows, the summary lines and a tiny run
(ragreplay's half; RAGAS's too only where /tmp/ragas-venv exists)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ragreplay.core.chat import ChatResponse
from ragreplay.core.eval import EvalContext, EvalRow
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.metrics.llm import build_request, scores_from_reply
from ragreplay.metrics.llm_batch import build_batch_request, scores_from_batch_reply

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import eval_side_by_side as bench  # noqa: E402
import mock_openai_server as mock  # noqa: E402


def _messages(row: EvalRow) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": m.content} for m in build_request(row).messages]


def _rows(tmp_path: Path, n: int) -> list[EvalRow]:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in bench.eval_rows(n)))
    rows: list[EvalRow] = read_eval_dataset(path)
    return rows


def test_rows_are_valid_eval_rows_with_one_to_three_contexts(tmp_path: Path) -> None:
    rows = _rows(tmp_path, 9)
    assert len({r.id for r in rows}) == 9
    assert sorted({len(r.contexts) for r in rows}) == [1, 2, 3]
    assert all(r.reference and r.answer.count(".") in (2, 3) for r in rows)
    ragas = bench.ragas_rows(bench.eval_rows(2))
    assert ragas[1]["user_input"] == rows[1].question and ragas[1]["response"] == rows[1].answer
    assert ragas[1]["retrieved_contexts"] == [c.text for c in rows[1].contexts]


def test_mock_answers_the_claims_check_with_a_reply_ragreplay_reads(tmp_path: Path) -> None:
    for row in _rows(tmp_path, 4):
        messages = _messages(row)
        assert mock.prompt_kind(messages) == "claims"
        metrics, counts, problem = scores_from_reply(mock.reply_for(messages), row)
        assert problem == "" and counts is not None
        assert counts.answer_claims == row.answer.count(".") and counts.reference_claims == 2
        assert counts.relevant_contexts == (True,) * len(row.contexts)
        assert metrics["faithfulness"].value == metrics["correctness"].value == 1.0


def test_mock_answers_the_batched_claims_check_row_by_row(tmp_path: Path) -> None:
    rows = _rows(tmp_path, 3)
    request = build_batch_request(rows)
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    assert mock.prompt_kind(messages) == "claims_batch"
    reply = ChatResponse(text=mock.reply_for(messages), model="mock")
    for row, scored in zip(rows, scores_from_batch_reply(reply, rows), strict=True):
        assert scored.problem == "" and scored.counts is not None
        assert scored.counts.answer_claims == row.answer.count(".")
        assert scored.metrics["faithfulness"].value == 1.0


def test_mock_claims_reply_without_a_reference_leaves_correctness_undetermined() -> None:
    row = EvalRow(
        id="q",
        question="When?",
        answer="At nine. Parking is free.",
        contexts=(EvalContext(id="a", text="x"),),
    )
    metrics, counts, _ = scores_from_reply(mock.reply_for(_messages(row)), row)
    assert counts is not None and counts.answer_claims == 2 and counts.reference_claims == 0
    assert metrics["faithfulness"].value == 1.0 and metrics["correctness"].value is None


def test_mock_counts_the_reply_words_per_client(tmp_path: Path) -> None:
    base_url, stop = mock.run_in_thread(latency_ms=0)
    try:
        body = json.dumps({"model": "m", "messages": _messages(_rows(tmp_path, 1)[0])}).encode()
        request = urllib.request.Request(
            f"{base_url}/chat/completions", data=body, headers={"User-Agent": "probe/1"}, method="POST"
        )
        with urllib.request.urlopen(request) as resp:
            reply = json.load(resp)["choices"][0]["message"]["content"]
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as resp:
            seen = json.load(resp)["clients"]["probe"]
    finally:
        stop()
    assert seen["kinds"] == {"claims": 1} and seen["words"] > 100
    assert seen["completion_words"] == len(reply.split()) > 0


def _result(tool: str, scenario: str, wall: float, requests: int, words: int) -> dict[str, Any]:
    return {
        "tool": tool,
        "scenario": scenario,
        "rows": 10,
        "rows_scored": 10,
        "wall_s": wall,
        "requests": requests,
        "words": words,
        "completion_words": 0,
        "kinds": {"claims": requests},
        "efficiency": 0.5,
        "cpu_s": 0.1,
        "rejected": 0,
        "server_errors": 1,
        "faithfulness": 1.0,
        "answer_correctness": None,
    }


def test_table_and_ratios() -> None:
    results = [_result("ragreplay", "open", 1.0, 10, 500), _result("RAGAS 0.4.3", "open", 20.0, 70, 2000)]
    assert bench.ratios(results) == [
        "open: ragreplay / RAGAS 0.4.3: wall 0.050x, words 0.250x, requests 0.143x"
    ]
    assert bench.ratios(results[:1]) == []
    lines = bench.table(results).splitlines()
    assert lines[2].startswith("| open | ragreplay | 10 | 10 | 1.00 | 1.00 (claims 1.00) | 50 (50 + 0) |")
    assert lines[3].endswith("| 1.000 | - |")


def _run(extra: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "benchmarks" / "eval_side_by_side.py"), "--json", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)


@pytest.mark.slow
def test_side_by_side_runs_ragreplay_half(tmp_path: Path) -> None:
    if not bench.RAGAS_PYTHON.exists():
        print(f"RAGAS half skipped: no virtualenv at {bench.RAGAS_PYTHON} (RAGAS is not installed in CI)")
    # ragreplay's half only, even where the RAGAS virtualenv exists
    absent = str(tmp_path / "absent" / "python")
    flags = ["--rows", "6", "--latency-ms", "5", "--rows-per-call", "3"]
    out = _run([*flags, "--ragas-python", absent, "--deepeval-python", absent])
    assert "RAGAS skipped" in out.stderr and "DeepEval skipped" in out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    batched = "ragreplay, 3 rows a call"
    assert [(r["scenario"], r["tool"]) for r in results] == [
        ("open", "ragreplay"),
        ("open", batched),
        ("limited", "ragreplay"),
        ("limited", batched),
    ]
    for grouped in (r for r in results if r["tool"] == batched):
        assert grouped["rows_scored"] == 6 and grouped["faithfulness"] == 1.0
        assert grouped["requests"] <= 4 and set(grouped["kinds"]) <= {"claims", "claims_batch"}
    for own in (r for r in results if r["tool"] == "ragreplay"):
        assert own["rows"] == own["rows_scored"] == 6 and own["faithfulness"] == 1.0
        assert own["requests"] == 6 and own["kinds"] == {"claims": 6}
        assert own["words"] > 6 * 100 and own["completion_words"] > 0
    assert "| open | ragreplay | 6 | 6 |" in out.stdout and "| limited | ragreplay | 6 | 6 |" in out.stdout


@pytest.mark.slow
@pytest.mark.skipif(not bench.RAGAS_PYTHON.exists(), reason=f"no RAGAS virtualenv at {bench.RAGAS_PYTHON}")
def test_ragas_scores_every_row_from_the_mock() -> None:
    out = _run(
        ["--rows", "4", "--latency-ms", "5", "--scenario", "open", "--deepeval-python", "/absent/python"]
    )
    results = json.loads(out.stdout.strip().splitlines()[-1])
    ragas = next(r for r in results if r["tool"].startswith("RAGAS"))
    assert ragas["rows"] == ragas["rows_scored"] == 4 and ragas["faithfulness"] == 1.0
    assert {"ragas_statements", "ragas_nli", "ragas_correctness", "embeddings"} <= ragas["kinds"].keys()
    assert "open: ragreplay / RAGAS" in out.stdout
