"""ragreplay and RAGAS side by side on the same rows against the same rate-limited mock endpoint.

The mock (``mock_openai_server.py``, its own process) limits requests to ``--rate-limit`` a second (a token
bucket, 429 with ``retry-after-ms`` over it; chat and embeddings share it), answers ``--error-rate`` of the
admitted ones with a 500 and the rest after ``--latency-ms``. The rows are ``replay_throughput.py``'s
(two-turn conversations, every second case a follow-up). Each tool runs in a process of its own, one after
the other, at its default settings:

- ragreplay: ``replay`` through the same service the CLI uses, an echo target (the new answer is the old one),
  one FIT verdict a row (and a rewrite call for a follow-up);
- RAGAS (``ragas_run.py`` in the virtualenv at ``--ragas-python``, default ``/tmp/ragas-venv``): faithfulness
  and answer_correctness, with the row's question, the same answer as response, the old answer as reference
  and as the one retrieved context (the rows have no other).

Per tool: rows with a result (a verdict; both RAGAS scores), wall s/row, requests/row (answered by the mock:
chat and embeddings), words/row (words those requests sent), efficiency (ideal wall at the limit over the
actual wall: the bucket's first second's worth at once, the other answered requests at the rate, plus one
latency), client CPU per request (the client's process CPU time during the run,
over answered requests; ``process CPU`` adds its start-up and imports). Without the RAGAS virtualenv only
ragreplay's half runs.

    python benchmarks/ragas_side_by_side.py --rows 200 --rate-limit 20 --error-rate 0.05 --latency-ms 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ragreplay.core.runs import ResultStatus
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.pricing import Price
from ragreplay.replay.replay_run import replay, select_cases
from ragreplay.settings import Settings
from ragreplay.targets.fake import FakeTarget
from replay_throughput import open_store, start_mock, synthetic_items

HERE = Path(__file__).resolve().parent
RAGAS_PYTHON = Path("/tmp/ragas-venv/bin/python")


def ragas_rows(n_rows: int) -> list[dict[str, Any]]:
    """The benchmark's cases as RAGAS rows: the echo target's answer is the old answer."""
    return [
        {
            "user_input": case.query,
            "response": case.old_answer,
            "reference": case.old_answer,
            "retrieved_contexts": [case.old_answer],
        }
        for _, cases, _ in synthetic_items(n_rows)
        for case in cases
    ]


async def _ragreplay_run(base_url: str, n_rows: int, db: str) -> dict[str, Any]:
    store = open_store(db, n_rows)
    try:
        settings = Settings(
            db=store.url,
            judge="mock:bench-model",
            providers={"mock": ProviderConfig(base_url=base_url)},
            prices={"mock:bench-model": Price(0.4, 1.6)},
        )
        cases = select_cases(store)
        target = FakeTarget(echo_old_answer=True, name="echo")
        start, cpu = time.perf_counter(), time.process_time()
        run = await replay(store, settings, target, cases, {}, env={}, fresh=True)
        wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu
        counts = store.runs.result_counts(run.id)
    finally:
        store.close()
    return {
        "tool": "ragreplay",
        "rows": len(cases),
        "rows_scored": counts.get(ResultStatus.DONE, 0),
        "wall_s": wall,
        "cpu_s": cpu_s,
    }


def ragreplay_client(base_url: str, n_rows: int) -> None:
    """ragreplay's half, in this process: prints one JSON line."""
    with tempfile.TemporaryDirectory() as tmp:
        print(
            json.dumps(asyncio.run(_ragreplay_run(base_url, n_rows, str(Path(tmp) / "bench.db")))), flush=True
        )


def _post(url: str) -> None:
    with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST")):
        pass


def _stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as resp:
        stats: dict[str, Any] = json.load(resp)
    return stats


def run_client(command: list[str], base_url: str, env: dict[str, str]) -> dict[str, Any]:
    """Run one client process against a freshly reset mock (bucket full again); its JSON line and the mock's counts."""
    _post(base_url.removesuffix("/v1") + "/reset")
    time.sleep(1.5)  # let the bucket refill after the other client
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    stats = _stats(base_url)
    clients = stats["clients"].values()
    result["requests"] = sum(c["requests"] for c in clients)
    result["words"] = sum(c["words"] for c in clients)
    result["completion_words"] = sum(c.get("completion_words", 0) for c in clients)
    kinds: dict[str, int] = {}
    for client in clients:
        for kind, count in client["kinds"].items():
            kinds[kind] = kinds.get(kind, 0) + count
    result["kinds"] = kinds
    result["rejected"], result["server_errors"] = stats["rejected"], stats["server_errors"]
    result["process_cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    result["errors"] = job_errors(done.stderr)
    return result


def job_errors(stderr: str) -> dict[str, int]:
    """RAGAS's failed jobs by exception (its executor logs ``Exception raised in Job[n]: Kind(...)``)."""
    errors: dict[str, int] = {}
    for kind in re.findall(r"Exception raised in Job\[\d+\]: (\w+)\(", stderr):
        errors[kind] = errors.get(kind, 0) + 1
    return errors


def ideal_wall(requests: int, rate: float, latency_s: float) -> float:
    """The shortest run of ``requests`` at the limit: the bucket's first ``rate`` (one second's) at once, the rest
    at ``rate`` a second, the last one's latency after."""
    return max(requests - rate, 0.0) / rate + latency_s


def table(results: list[dict[str, Any]], rate: float, latency_s: float) -> str:
    """The Markdown table of the results."""
    lines = [
        "| tool | rows | rows with a result | wall s/row | requests/row | words/row | efficiency | "
        "client CPU/request | process CPU (s) | 429s | 500s | requests by kind |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        rows, requests = r["rows"], max(r["requests"], 1)
        ideal = ideal_wall(r["requests"], rate, latency_s)
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items()))
        lines.append(
            f"| {r['tool']} | {rows} | {r['rows_scored']} | {r['wall_s'] / rows:.3f} | {r['requests'] / rows:.2f} | "
            f"{r['words'] / rows:.0f} | {ideal / r['wall_s']:.3f} | {r['cpu_s'] / requests * 1000:.2f} ms | "
            f"{r['process_cpu_s']:.1f} | {r['rejected']} | {r['server_errors']} | {kinds} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run both halves and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--rate-limit", type=float, default=20.0, help="the endpoint's requests a second")
    parser.add_argument(
        "--error-rate", type=float, default=0.05, help="share of admitted requests answered 500"
    )
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument(
        "--ragas-python", type=Path, default=RAGAS_PYTHON, help="the RAGAS virtualenv's python"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON after the table")
    parser.add_argument("--client", choices=["ragreplay"], help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client == "ragreplay":
        ragreplay_client(args.base_url, args.rows)
        return

    extra = ["--rate-limit", str(args.rate_limit), "--error-rate", str(args.error_rate)]
    base_url, mock = start_mock(args.latency_ms, *extra)
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "x", "RAGAS_DO_NOT_TRACK": "true"}
    results: list[dict[str, Any]] = []
    try:
        own = [sys.executable, str(Path(__file__).resolve()), "--client", "ragreplay"]
        results.append(run_client([*own, "--base-url", base_url, "--rows", str(args.rows)], base_url, env))
        if args.ragas_python.exists():
            with tempfile.TemporaryDirectory() as tmp:
                rows_file = Path(tmp) / "rows.json"
                rows_file.write_text(json.dumps(ragas_rows(args.rows)))
                command = [str(args.ragas_python), str(HERE / "ragas_run.py"), str(rows_file)]
                results.append(run_client(command, base_url, env))
        else:
            print(
                f"RAGAS skipped: no virtualenv at {args.ragas_python} (python3 -m venv /tmp/ragas-venv && "
                "/tmp/ragas-venv/bin/pip install ragas==0.4.3 'langchain-community==0.4.1')",
                file=sys.stderr,
            )
    finally:
        mock.terminate()
        mock.wait(10)
    print(
        f"{args.rows} rows, mock at {args.rate_limit:g} requests/s, {args.error_rate:.0%} 500s, "
        f"{args.latency_ms:g} ms latency"
    )
    print(table(results, args.rate_limit, args.latency_ms / 1000))
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
