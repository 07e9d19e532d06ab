"""The benchmark scripts' scoring, and a small run of each against the fake model / loopback mock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import rewrite_cast  # noqa: E402

CAST = rewrite_cast.DATA / "cast_rewrites_2019_2020.normalized.jsonl"


def test_token_f1_and_added_terms() -> None:
    assert rewrite_cast.token_f1("How old is Lisa?", "how old is lisa") == 1.0
    assert rewrite_cast.token_f1("a b", "c d") == 0.0
    assert rewrite_cast.token_f1("lisa age", "lisa age now") == pytest.approx(0.8)
    assert rewrite_cast.added_terms("Is it treatable?", "Is throat cancer treatable?") == {"throat", "cancer"}


def test_scores_split_turns_by_whether_a_rewrite_is_needed() -> None:
    rows = [
        {"question": "What is X?", "rewrite": "What is X?", "history": []},  # first turn: ignored
        {"question": "Tell me about Y.", "rewrite": "Tell me about Y.", "history": [{"text": "What is X?"}]},
        {"question": "Is it big?", "rewrite": "Is Y big?", "history": [{"text": "Tell me about Y."}]},
    ]
    scores = rewrite_cast.score(rows, ["What is X?", "Tell me about Y.", "Is Y big?"])
    assert scores.kept == [True] and scores.exact == [True] and scores.recall == [1.0]
    identity = rewrite_cast.score(rows, [r["question"] for r in rows])
    assert identity.exact == [False] and identity.recall == [0.0]


@pytest.mark.skipif(not CAST.exists(), reason=f"CAsT data not at {CAST}")
def test_rewrite_benchmark_runs_with_the_fake_model() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "rewrite_cast.py"),
            "--rewriter",
            "fake:default",
            "--limit",
            "40",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "40 turns" in out and "`fake:default`" in out and "identity" in out


def run_benchmark(script: str, *args: str) -> list[str]:
    """Run ``benchmarks/<script>`` with ``args``; the cells of the table row it prints last."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return out.strip().splitlines()[-1].split("|")


def test_throughput_benchmark_runs_small() -> None:
    last = run_benchmark("replay_throughput.py", "--cases", "40", "--concurrency", "8", "--latency-ms", "20")
    cases, calls, warm_calls = int(last[1]), int(last[4]), int(last[8])
    assert cases == 40 and calls == 60 and warm_calls == 0


def test_gate_benchmark_runs_small() -> None:
    last = run_benchmark("gate_throughput.py", "--items", "30", "--concurrency", "4", "--latency-ms", "20")
    items, calls, minimum, warm_calls = int(last[1]), int(last[4]), int(last[5]), int(last[9])
    assert items == 30 and calls == minimum == 60 and warm_calls == 0


@pytest.mark.parametrize("shape", [[], ["--one-conversation"]])
def test_ingest_benchmark_runs_small(shape: list[str]) -> None:
    last = run_benchmark("ingest_speed.py", "--messages", "4000", *shape)
    file_mb, cases, store_mb = float(last[4]), int(last[5]), float(last[11])
    assert cases == 2000
    # one long conversation is stored once, not once more per case (that was 100x the file at 4,000 messages)
    assert store_mb < 20 * max(file_mb, 0.1)


def test_replay_scale_benchmark_runs_small() -> None:
    cpu = run_benchmark("replay_scale.py", "cpu", "--cases", "40", "--concurrency", "4")
    assert int(cpu[1]) == 40 and int(cpu[3]) == 60 and float(cpu[5]) > 0  # cases, model calls, CPU per case
    memory = run_benchmark("replay_scale.py", "memory", "--cases", "60")
    assert int(memory[1]) == 60 and float(memory[2]) > 0
    startup = run_benchmark("replay_scale.py", "startup", "--repeat", "1")
    assert "ragreplay run --help" in startup[1] and float(startup[2]) > 0 and float(startup[3]) > 0
    split = run_benchmark("replay_scale.py", "profile", "--cases", "40", "--concurrency", "4")
    assert split[1].strip() in ("event loop", "writer") and float(split[3]) >= 0  # thread, group, CPU s


def test_throughput_benchmark_against_a_rate_limited_endpoint_runs_small() -> None:
    last = run_benchmark(
        "replay_throughput.py",
        *("--cases", "40", "--rate-limit", "40", "--error-rate", "0.05", "--latency-ms", "20"),
    )
    cases, verdicts, errors, completions, minimum = (
        int(c) for c in (last[1], last[3], last[4], last[5], last[6])
    )
    assert cases == verdicts == 40 and errors == 0 and completions == minimum == 60


def test_bare_client_benchmark_runs_small() -> None:
    row = run_benchmark(
        "bare_client.py", "--calls", "40", "--concurrency", "4", "--latency-ms", "20", "--repeat", "1"
    )
    calls, wall, ideal, achieved, mean_ms = (
        int(row[1]),
        float(row[4]),
        float(row[5]),
        float(row[6]),
        float(row[7]),
    )
    assert calls == 40 and ideal == pytest.approx(0.2)
    assert 0 < achieved <= 1.0 and achieved == pytest.approx(ideal / wall, abs=0.002)
    assert mean_ms >= 20  # every call waited out the mock's latency
