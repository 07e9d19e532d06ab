"""``ragreplay eval``, RAGAS and DeepEval side by side: answer correctness and faithfulness on the same rows, same
mock.

The tools score the same ``--rows`` rows (question, answer, reference, 1-3 contexts) for faithfulness and
answer correctness against the mock endpoint (``mock_openai_server.py``, its own process), in two scenarios:

- ``open``: ``--latency-ms`` a request, no limit: wall, requests, words (prompt + completion) and efficiency
  (the ideal wall, answered requests x latency / ``--concurrency``, over the actual wall);
- ``limited``: also ``--rate-limit`` requests a second (token bucket, chat and embeddings sharing it) and
  ``--error-rate`` of the admitted requests answered 500: rows scored by each (efficiency there: the ideal wall
  at the limit of ``ragas_side_by_side.ideal_wall`` over the actual).

Each tool runs in a process of its own, one after the other, against a freshly reset mock:

- ragreplay: :func:`ragreplay.evaluation.run.evaluate_dataset` (what ``ragreplay eval`` runs) on the rows read
  by ``read_eval_dataset`` from a JSONL file, judge ``mock:bench-model``, at most ``--concurrency`` calls at once
  (the provider's ``max_concurrency``) and ``--eval-concurrency`` rows calling at once (``ragreplay eval
  --concurrency``; as many more may wait for their saves), its default retries; one claims-check call a row,
  plus the lexical metrics (the rows have a reference);
- RAGAS (``ragas_run.py`` in the virtualenv at ``--ragas-python``): ``faithfulness`` and
  ``answer_correctness`` through ``evaluate`` (its async executor, ``RunConfig()``: 16 workers, 10 retries);
- DeepEval (``deepeval_run.py`` in the virtualenv at ``--deepeval-python``): ``FaithfulnessMetric`` and a G-Eval
  "Correctness" against the expected output (DeepEval's documented recipe) through ``evaluate`` (its async path,
  16 test cases at once, its default 2 attempts a call), telemetry off.

A row is scored when it has both figures (ragreplay: faithfulness and correctness determined and no error;
RAGAS: neither NaN; DeepEval: both metrics scored without an error). The mock answers every prompt kind with JSON
of the shape the tool parses (every claim or statement supported), so the scores say the replies were read; what
is measured is the traffic. A tool whose virtualenv is missing is skipped (ragreplay's half always runs).

    python benchmarks/eval_side_by_side.py --rows 500 --latency-ms 100 --rate-limit 20 --error-rate 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragas_side_by_side import RAGAS_PYTHON, ideal_wall, run_client
from ragreplay.core.eval import MetricValue
from ragreplay.evaluation.run import evaluate_dataset
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.metrics.lexical import load_backends
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.pricing import Price
from ragreplay.settings import Settings
from ragreplay.store import Store
from replay_throughput import start_mock

HERE = Path(__file__).resolve().parent
DEEPEVAL_PYTHON = Path("/tmp/deepeval-venv/bin/python")
DEEPEVAL_INSTALL = "python3 -m venv /tmp/deepeval-venv && /tmp/deepeval-venv/bin/pip install deepeval==4.3.1"
RAGAS_INSTALL = (
    "python3 -m venv /tmp/ragas-venv && "
    "/tmp/ragas-venv/bin/pip install ragas==0.4.3 'langchain-community==0.4.1'"
)
JUDGE = "mock:bench-model"
TOPICS = ("annual leave", "parental leave", "remote work", "travel expenses", "training budget", "parking")
TEAMS = ("HR", "Finance", "Facilities", "IT", "Legal")


def eval_rows(n_rows: int) -> list[dict[str, Any]]:
    """``n_rows`` deterministic rows in ``ragreplay eval``'s format: 2-3 answer sentences, a reference of 2,
    1-3 contexts (``i % 3 + 1``) of about 30 words each."""
    rows = []
    for i in range(n_rows):
        topic, team, days = TOPICS[i % len(TOPICS)], TEAMS[i % len(TEAMS)], 5 + i % 25
        answer = f"Policy {i} grants {days} days of {topic} a year. Requests go to the {team} team."
        if i % 2:
            answer += f" Unused days expire at the end of March {2020 + i % 6}."
        contexts = [
            f"Policy {i}, section {k + 1}: employees get {days} days of {topic} each calendar year. The {team} "
            f"team approves requests within {k + 2} working days and keeps the records for audit."
            for k in range(i % 3 + 1)
        ]
        rows.append(
            {
                "id": f"r{i:05d}",
                "question": f"How many days of {topic} does policy {i} grant, and who approves them?",
                "answer": answer,
                "reference": f"Policy {i} grants {days} days of {topic}. The {team} team approves them.",
                "contexts": contexts,
            }
        )
    return rows


def ragas_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same rows in RAGAS's ``EvaluationDataset`` fields (what ``ragas_run.py`` reads)."""
    return [
        {
            "user_input": r["question"],
            "response": r["answer"],
            "reference": r["reference"],
            "retrieved_contexts": list(r["contexts"]),
        }
        for r in rows
    ]


def _determined(metrics: Mapping[str, MetricValue], name: str) -> float | None:
    value = metrics.get(name)
    return None if value is None else value.value


async def _ragreplay_eval(
    base_url: str, rows_file: Path, db: str, concurrency: int, eval_concurrency: int, rows_per_call: int = 1
) -> dict[str, Any]:
    settings = Settings(
        db=db,
        concurrency=eval_concurrency,
        providers={"mock": ProviderConfig(base_url=base_url, max_concurrency=concurrency)},
        prices={JUDGE: Price(0.4, 1.6)},
    )
    warm = time.perf_counter()
    load_backends()  # sacrebleu's import (what `ragreplay eval` does before its first row): RAGAS's are untimed too
    warm_s = time.perf_counter() - warm
    store = Store.open(db)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        rows = read_eval_dataset(rows_file)
        report = await evaluate_dataset(
            store, settings, rows, str(rows_file), JUDGE, fresh=True, env={}, rows_per_call=rows_per_call
        )
        wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    finally:
        store.close()
    pairs = [
        (_determined(r.metrics, "faithfulness"), _determined(r.metrics, "correctness"))
        for r in report.rows
        if r.error is None
    ]
    scored = [(f, c) for f, c in pairs if f is not None and c is not None]
    return {
        "tool": "ragreplay" if rows_per_call == 1 else f"ragreplay, {rows_per_call} rows a call",
        "rows": len(rows),
        "rows_scored": len(scored),
        "faithfulness": sum(f for f, _ in scored) / len(scored) if scored else None,
        "answer_correctness": sum(c for _, c in scored) / len(scored) if scored else None,
        "wall_s": wall,
        "cpu_s": cpu_s,
        "warm_up_s": warm_s,
    }


def ragreplay_client(
    base_url: str, rows_file: Path, concurrency: int, eval_concurrency: int, rows_per_call: int = 1
) -> None:
    """ragreplay's half, in this process: prints one JSON line."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "eval.db")
        result = asyncio.run(
            _ragreplay_eval(base_url, rows_file, db, concurrency, eval_concurrency, rows_per_call)
        )
    print(json.dumps(result), flush=True)


def run_scenario(args: argparse.Namespace, limited: bool, rows_dir: Path) -> list[dict[str, Any]]:
    """Both tools against one mock (``limited``: with the rate limit and the 500s); their results."""
    extra = ["--rate-limit", str(args.rate_limit), "--error-rate", str(args.error_rate)] if limited else []
    base_url, mock = start_mock(args.latency_ms, *extra)
    env = {
        **os.environ,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "x",
        "RAGAS_DO_NOT_TRACK": "true",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    }
    results: list[dict[str, Any]] = []
    try:
        own = [sys.executable, str(Path(__file__).resolve()), "--client", "ragreplay", "--base-url", base_url]
        own += ["--rows-file", str(rows_dir / "rows.jsonl"), "--concurrency", str(args.concurrency)]
        own += ["--eval-concurrency", str(args.eval_concurrency)]
        results.append(run_client(own, base_url, env))
        if args.rows_per_call > 1:  # the same rows again, batched (ragreplay eval --rows-per-call)
            results.append(run_client([*own, "--rows-per-call", str(args.rows_per_call)], base_url, env))
        if args.ragas_python.exists():
            command = [str(args.ragas_python), str(HERE / "ragas_run.py"), str(rows_dir / "ragas_rows.json")]
            results.append(run_client(command, base_url, env))
        if args.deepeval_python.exists():
            command = [str(args.deepeval_python), str(HERE / "deepeval_run.py"), str(rows_dir / "rows.jsonl")]
            results.append(run_client(command, base_url, env))
    finally:
        mock.terminate()
        mock.wait(10)
    for result in results:
        result["scenario"] = "limited" if limited else "open"
        if limited:
            ideal = ideal_wall(result["requests"], args.rate_limit, args.latency_ms / 1000)
        else:
            ideal = result["requests"] * args.latency_ms / 1000 / args.concurrency
        result["efficiency"] = ideal / result["wall_s"]
    return results


def table(results: list[dict[str, Any]]) -> str:
    """The Markdown table of the results (per row: requests by kind, words sent + replied)."""
    lines = [
        "| scenario | tool | rows | rows scored | wall (s) | requests/row | words/row (prompt + completion) | "
        "efficiency | client CPU (s) | 429s | 500s | faithfulness | answer correctness |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows = max(r["rows"], 1)
        kinds = ", ".join(f"{k} {v / rows:.2f}" for k, v in sorted(r["kinds"].items()))
        words = (r["words"] + r["completion_words"]) / rows
        scores = [f"{r[m]:.3f}" if r[m] is not None else "-" for m in ("faithfulness", "answer_correctness")]
        lines.append(
            f"| {r['scenario']} | {r['tool']} | {r['rows']} | {r['rows_scored']} | {r['wall_s']:.2f} | "
            f"{r['requests'] / rows:.2f} ({kinds}) | {words:.0f} ({r['words'] / rows:.0f} + "
            f"{r['completion_words'] / rows:.0f}) | {r['efficiency']:.3f} | {r['cpu_s']:.1f} | "
            f"{r['rejected']} | {r['server_errors']} | {scores[0]} | {scores[1]} |"
        )
    return "\n".join(lines)


def ratios(results: list[dict[str, Any]]) -> list[str]:
    """Each ragreplay run over each peer (RAGAS, DeepEval) run in the same scenario: wall, words and requests."""
    out = []
    for scenario in ("open", "limited"):
        runs = [r for r in results if r["scenario"] == scenario]
        own_runs = [r for r in runs if r["tool"].startswith("ragreplay")]
        peers = [r for r in runs if not r["tool"].startswith("ragreplay")]
        for own in own_runs:
            for peer in peers:
                own_words = own["words"] + own["completion_words"]
                peer_words = peer["words"] + peer["completion_words"]
                out.append(
                    f"{scenario}: {own['tool']} / {peer['tool']}: wall {own['wall_s'] / peer['wall_s']:.3f}x, "
                    f"words {own_words / max(peer_words, 1):.3f}x, "
                    f"requests {own['requests'] / max(peer['requests'], 1):.3f}x"
                )
    return out


def main() -> None:
    """Write the rows, run the scenarios and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--rate-limit", type=float, default=20.0, help="requests a second (limited)")
    parser.add_argument("--error-rate", type=float, default=0.05, help="share answered 500 (limited)")
    parser.add_argument("--concurrency", type=int, default=16, help="ragreplay's calls at once (the ideal's)")
    parser.add_argument(
        "--eval-concurrency",
        type=int,
        default=16,
        help="ragreplay's rows calling at once (`ragreplay eval --concurrency`)",
    )
    parser.add_argument(
        "--rows-per-call",
        type=int,
        default=1,
        help="also run ragreplay with this many rows a claims call (`ragreplay eval --rows-per-call`)",
    )
    parser.add_argument("--scenario", choices=["both", "open", "limited"], default="both")
    parser.add_argument(
        "--ragas-python", type=Path, default=RAGAS_PYTHON, help="the RAGAS virtualenv's python"
    )
    parser.add_argument(
        "--deepeval-python", type=Path, default=DEEPEVAL_PYTHON, help="the DeepEval virtualenv's python"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON after the table")
    parser.add_argument("--client", choices=["ragreplay"], help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--rows-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client == "ragreplay":
        ragreplay_client(
            args.base_url, args.rows_file, args.concurrency, args.eval_concurrency, args.rows_per_call
        )
        return
    if not args.ragas_python.exists():
        print(f"RAGAS skipped: no virtualenv at {args.ragas_python} ({RAGAS_INSTALL})", file=sys.stderr)
    if not args.deepeval_python.exists():
        print(
            f"DeepEval skipped: no virtualenv at {args.deepeval_python} ({DEEPEVAL_INSTALL})", file=sys.stderr
        )
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows = eval_rows(args.rows)
        rows_dir = Path(tmp)
        (rows_dir / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (rows_dir / "ragas_rows.json").write_text(json.dumps(ragas_rows(rows)))
        for limited in (False, True):
            if args.scenario in ("both", "limited" if limited else "open"):
                results += run_scenario(args, limited, rows_dir)
    print(
        f"{args.rows} rows; open: {args.latency_ms:g} ms latency, no limit; limited: also "
        f"{args.rate_limit:g} requests/s and {args.error_rate:.0%} 500s; ragreplay {args.concurrency} calls and "
        f"{args.eval_concurrency} rows calling at once; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(table(results))
    for line in ratios(results):
        print(line)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
