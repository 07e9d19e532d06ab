"""`ragreplay eval --target` end to end on SQLite with the demo's builtin challenger and the fake judge: the answers
and contexts scored are the target's (not the dataset's), stage latencies and percentiles in every format, judge
replies from the cache counted apart, a SIGKILLed run resumed without asking the target again for a saved row,
`golden:NAME` as the dataset, and the mistakes (no --target for a golden set or a row without answer: exit 2)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.test_eval_cli import write_rows
from ragreplay.cli.app import main
from ragreplay.core.eval import EvalRow
from ragreplay.evaluation.target_rows import row_case
from ragreplay.targets.loader import load_target

DEMO = Path(__file__).resolve().parents[2] / "src" / "ragreplay" / "demo" / "data"
CHALLENGER = DEMO / "challenger.yaml"
STAGES = ("retrieval", "generation", "target", "judging", "total")


def _questions(n: int) -> list[dict[str, Any]]:
    """The first ``n`` opening questions of the demo's ground truth, with their facts as the reference."""
    rows = [json.loads(line) for line in (DEMO / "ground_truth.jsonl").read_text().splitlines()]
    firsts = [r for r in rows if r["turn"] == 0][:n]
    return [
        {
            "id": f"g{i}",
            "question": r["question"],
            "reference": " ".join(r["expected_facts"]),
            "tags": {"department": r["tags"]["department"], "language": r["tags"]["language"]},
        }
        for i, r in enumerate(firsts)
    ]


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow  # the challenger's index with the packaged embeddings, four runs: ~50 s on a busy 2-core machine
def test_the_target_answers_every_row_with_stage_latencies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGREPLAY_FAKE_LATENCY_MS", "3")
    rows = _questions(4)
    rows[0]["answer"] = "A stale answer the dataset had: the target's replaces it."
    data = write_rows(tmp_path / "rows.jsonl", rows)
    db = str(tmp_path / "e.db")
    args = ["eval", str(data), "--target", str(CHALLENGER), "--judge", "fake:default", "--db", db]
    report = _json(args, capsys)
    target = load_target(CHALLENGER)
    assert report["run"]["config"]["target"]["version"] == target.version
    for got, row in zip(report["rows"], rows, strict=True):
        answer = got["target_answer"]
        assert got["answer"] == answer["text"] and "stale" not in answer["text"] and answer["contexts"]
        assert got["question"] == row["question"]
        trace = got["trace"]
        assert all(trace[f"{s}_ms"] > 0 for s in STAGES) and not trace["judge_cached"]
        assert trace["total_ms"] == pytest.approx(trace["target_ms"] + trace["judging_ms"])
        assert trace["target_cost_usd"] == 0.0 and trace["judge_tokens_in"] > 0
    # the same question asked of the target directly gets the same answer (the builtin RAG is deterministic)
    labels = tuple(f"{k}={v}" for k, v in rows[0]["tags"].items())
    case = row_case(EvalRow(id="g0", question=rows[0]["question"], answer="", tags=labels))
    direct = asyncio.run(target.answer(rows[0]["question"], case))
    assert report["rows"][0]["target_answer"]["text"] == direct.text
    tracing = report["summary"]["tracing"]
    stages = {s["stage"]: s for s in tracing["stages"]}
    assert set(stages) == set(STAGES)
    for s in stages.values():
        assert s["n"] == 4 and 0 < s["p50"] <= s["p95"] <= s["p99"] <= s["max"]
    assert stages["judging"]["p50"] == pytest.approx(3.0)  # one claims call per row, 3 ms each (the fake's)
    target_cost, judge_cost = tracing["costs"]
    assert target_cost["usd"] == 0.0 and target_cost["unknown_rows"] == 0 and judge_cost["tokens_out"] > 0
    # md and text: the tracing tables, the target's name escaped in a table cell
    assert main([*args, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "## latency per stage, ms" in md and "| retrieval (target) | 4 |" in md
    assert f"| target challenger ({target.version[:12]}) | 4 |" in md
    # a new run of the same rows: every judge reply is in the cache, so judging is not timed
    fresh = _json([*args, "--fresh"], capsys)
    cached = fresh["summary"]["tracing"]
    assert cached["judge_cached_rows"] == 4
    assert {s["stage"] for s in cached["stages"]} == {"retrieval", "generation", "target"}
    assert main([*args, "--fresh"]) == 0
    assert "(4 row(s) judged from the cache: not timed, no total)" in capsys.readouterr().out


@pytest.mark.slow  # two processes, each loading the packaged embeddings
def test_sigkill_and_resume_never_ask_the_target_twice(tmp_path: Path) -> None:
    """The target generates with the fake model (uncached: a second ask would log its key again); the judge
    hangs after 6 calls (3 rows with --rubric), so rows 4 and 5 (and any row answered while they hung) are killed
    answered but not judged."""
    target = tmp_path / "generating.yaml"
    config = CHALLENGER.read_text().replace("corpus: corpus/", f"corpus: {DEMO / 'corpus'}/")
    config = config.replace(
        "answer: {mode: extractive, max_sentences: 2}", "answer: {mode: generate, model: 'fake:default'}"
    )
    assert "generate" in config
    target.write_text(config)
    data = write_rows(tmp_path / "rows.jsonl", _questions(8))
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log)}
    rubric = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rubric.yaml"
    args = [sys.executable, "-m", "ragreplay.cli.app", "eval", str(data), "--target", str(target)]
    args += ["--judge", "fake:default", "--rubric", str(rubric), "--db", str(tmp_path / "e.db")]
    first = subprocess.Popen(
        [*args, "--concurrency", "2"],
        env={**env, "RAGREPLAY_FAKE_HANG_AFTER": "6"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def generated() -> list[str]:
        return [c["key"] for c in _log(log) if c["task"] == "generate"]

    deadline = time.monotonic() + 300  # the corpus embeddings may be computed first, on a loaded machine
    while (len(generated()) < 5 or len(_log(log)) < 11) and time.monotonic() < deadline:
        assert first.poll() is None, "the first attempt ended before it was killed"
        time.sleep(0.05)
    time.sleep(0.7)  # the writer flushes the answers saved before judging
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    # rows 4 and 5 hang in the judge holding both call slots; the rows waiting for a slot meanwhile (as many as
    # the two more rows in flight) may have been answered too
    answered = len(generated())
    assert 5 <= answered <= 7 and len(_log(log)) == answered + 6
    second = subprocess.run([*args, "--format", "json"], env=env, capture_output=True, timeout=300)
    assert second.returncode == 0, second.stderr.decode()
    assert "resuming eval run" in second.stderr.decode()
    report = json.loads(second.stdout)
    assert report["summary"]["rows"] == 8 and report["summary"]["errors"] == 0
    keys = generated()
    assert len(keys) == 8 and len(set(keys)) == 8  # the target was asked once per row over both attempts
    judged = [c["key"] for c in _log(log) if c["task"] != "generate"]
    assert len(judged) == 16 and len(set(judged)) == 16
    assert all(r["target_answer"]["text"] == r["answer"] for r in report["rows"])


def test_golden_set_as_the_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "e.db")
    golden = write_rows(tmp_path / "golden.jsonl", _questions(3))
    assert main(["golden", "import", str(golden), "--name", "hr", "--db", db]) == 0
    capsys.readouterr()
    report = _json(["eval", "golden:hr", "--target", str(CHALLENGER), "--db", db], capsys)
    assert report["run"]["dataset"] == "golden:hr@v1" and report["summary"]["rows"] == 3
    assert all(r["answer"] and r["target_answer"]["contexts"] for r in report["rows"])
    assert {m["name"] for m in report["summary"]["metrics"]} >= {"token_f1", "rouge_l"}
    assert "judging" not in {s["stage"] for s in report["summary"]["tracing"]["stages"]}  # no judge
    again = _json(["eval", "golden:hr@v1", "--target", str(CHALLENGER), "--db", db], capsys)
    assert again["run"]["id"] == report["run"]["id"]  # the same rows and target: shown again


@pytest.mark.parametrize(
    ("dataset", "target", "expected"),
    [
        ("golden:hr", False, "golden:hr: a golden set's rows have no answers to score. Fix: add --target"),
        ("golden:nope", True, "no golden set 'nope'"),
        ("NOANSWER", False, "rows.jsonl:1: field 'answer' is missing"),
    ],
)
def test_mistakes_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dataset: str, target: bool, expected: str
) -> None:
    db = tmp_path / "e.db"
    golden = write_rows(tmp_path / "golden.jsonl", _questions(1))
    assert main(["golden", "import", str(golden), "--name", "hr", "--db", str(db)]) == 0
    capsys.readouterr()
    if dataset == "NOANSWER":
        dataset = str(write_rows(tmp_path / "rows.jsonl", _questions(1)))
    args = ["eval", dataset, "--db", str(db), *(["--target", str(CHALLENGER)] if target else [])]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "Traceback" not in err
    if dataset.endswith("rows.jsonl"):
        assert "or pass --target TARGET.yaml" in err
