"""`shadow judge` as several worker processes sharing one store: rows/s with 1, 2 and 4 workers against the mock
endpoint, and one worker killed with SIGKILL mid-run.

    python benchmarks/workers_scale.py make --rows 2000 --db postgresql://postgres@127.0.0.1:5432/bench_workers
    python benchmarks/workers_scale.py measure --db URL --workers 1 2 4 --latency-ms 200 --concurrency 8
    python benchmarks/workers_scale.py kill --db URL --workers 4 --latency-ms 200 --concurrency 8

``make`` writes the rows with :func:`regset_scale.make` (N shadow rows over 30 days) and leaves them unjudged.
``measure`` unjudges every row (judgments, claims and the model cache deleted), starts N processes of
``ragreplay shadow judge --workers 1`` (as N machines would run it; N = 0: one plain ``shadow judge``, claiming
nothing, the baseline) against the mock OpenAI-compatible endpoint (``mock_openai_server.py``, its own process,
a fixed latency), and times them from start to the last exit: one JSON line per N with the rows/s (rows over
the span of their ``judged_at``, so without the start-up of the processes, a fixed second or two;
``rows_per_s_wall`` with it) and the speed-up over the first N measured. The mock is not the bottleneck: each
worker keeps ``--concurrency`` rows in flight, so one worker is bound by the endpoint's latency, not its CPU.
``kill`` starts N workers, kills one with SIGKILL once a third of the rows are judged, and reports the rows
lost, judgments beyond one a row, and calls made again (the mock counts its requests: each row is three), which
must stay within the killed worker's calls in flight (``--concurrency`` rows of three calls).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete, func, select, update

from ragreplay.store import Store
from ragreplay.store.schema import llm_cache, shadow_judgments, shadow_rows, work_claims
from regset_scale import make as make_judged
from replay_throughput import mock_stats, start_mock

SINCE = "2026-10-01"  # before the first row regset_scale writes (30 days before 2026-12-01)
CALLS_PER_ROW = 3  # the FIT judge once, the pairwise judge in both orders


def unjudge(db: str) -> int:
    """Every row back to unjudged: judgments, claims and cached replies deleted; returns the rows."""
    with Store.open(db) as store, store._engine.begin() as conn:
        conn.execute(delete(shadow_judgments))
        conn.execute(delete(work_claims))
        conn.execute(delete(llm_cache))
        conn.execute(update(shadow_rows).values(judged_at=None))
        return int(conn.execute(select(func.count()).select_from(shadow_rows)).scalar_one())


def counts(db: str) -> tuple[int, int, int]:
    """(rows, judgments, unjudged rows)."""
    with Store.open(db) as store, store._engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(shadow_rows)).scalar_one()
        judged = conn.execute(select(func.count()).select_from(shadow_judgments)).scalar_one()
        left = conn.execute(
            select(func.count()).select_from(shadow_rows).where(shadow_rows.c.judged_at.is_(None))
        ).scalar_one()
    return int(total), int(judged), int(left)


def judging_span(db: str) -> float:
    """Seconds from the first row judged to the last (each row's ``judged_at``): the run without the
    workers' start-up (importing, opening the store), which does not grow with the rows."""
    with Store.open(db) as store, store._engine.connect() as conn:
        first, last = conn.execute(
            select(func.min(shadow_judgments.c.judged_at), func.max(shadow_judgments.c.judged_at))
        ).one()
    return float((last - first).total_seconds())


def config(folder: Path, base_url: str, concurrency: int) -> Path:
    path = folder / "ragreplay.yaml"
    path.write_text(
        "providers:\n  mock:\n    kind: openai\n"
        f"    base_url: {base_url}\n    api_key_env: MOCK_KEY\n    api_key_optional: true\n"
        f"    max_concurrency: {concurrency * CALLS_PER_ROW}\n    max_retries: 0\n"
    )
    return path


def start_workers(
    db: str, n: int, cfg: Path, concurrency: int, lease: float = 60.0
) -> list[subprocess.Popen[bytes]]:
    command = [
        sys.executable,
        "-m",
        "ragreplay.cli.app",
        "shadow",
        "judge",
        "--db",
        db,
        "--lease",
        str(lease),
    ]
    command += ["--judge", "mock:judge", "--since", SINCE, "--concurrency", str(concurrency)]
    command += ["--config", str(cfg), "--format", "json"]
    command += ["--workers", "1"] if n > 0 else []  # 0: one plain process, claiming nothing (the baseline)
    env = {**os.environ, "RAGREPLAY_BLOCK_REAL_MODELS": "0"}
    return [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(max(n, 1))
    ]


def measure(args: argparse.Namespace) -> None:
    base_url, mock = start_mock(args.latency_ms)
    one: float | None = None
    try:
        with tempfile.TemporaryDirectory() as folder:
            cfg = config(Path(folder), base_url, args.concurrency)
            for n in args.workers:
                rows = unjudge(args.db)
                before = mock_stats(base_url)["completions"]
                started = time.perf_counter()
                procs = start_workers(args.db, n, cfg, args.concurrency)
                outs = [p.communicate() for p in procs]
                wall = time.perf_counter() - started
                bad = [err.decode()[-500:] for p, (_, err) in zip(procs, outs, strict=True) if p.returncode]
                judged = sum(
                    json.loads(out)["judged"] for p, (out, _) in zip(procs, outs, strict=True) if out
                )
                _, stored, left = counts(args.db)
                rate = judged / wall
                steady = judged / max(judging_span(args.db), 1e-9)
                one = one or steady
                print(
                    json.dumps(
                        {
                            "workers": n,
                            "rows": rows,
                            "judged": judged,
                            "judgments_stored": stored,
                            "unjudged_left": left,
                            "calls": mock_stats(base_url)["completions"] - before,
                            "wall_s": round(wall, 2),
                            "rows_per_s_wall": round(rate, 1),
                            "rows_per_s": round(steady, 1),
                            "speedup": round(steady / one, 2),
                            "failed": bad,
                        }
                    ),
                    flush=True,
                )
    finally:
        mock.terminate()
        mock.wait(10)


def kill(args: argparse.Namespace) -> None:
    base_url, mock = start_mock(args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as folder:
            cfg = config(Path(folder), base_url, args.concurrency)
            rows = unjudge(args.db)
            before = mock_stats(base_url)["completions"]
            procs = start_workers(args.db, args.workers, cfg, args.concurrency, args.lease)
            started = time.perf_counter()
            while counts(args.db)[1] < rows // 3:
                time.sleep(0.2)
            with Store.open(args.db) as store:
                held = store.work_claims.claims("shadow-judge")
            victim = procs[0]
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            held_by_victim = sum(1 for worker, _ in held.values() if f":{victim.pid}:" in worker)
            outs = [p.communicate() for p in procs[1:]]
            wall = time.perf_counter() - started
            total, stored, left = counts(args.db)
            calls = mock_stats(base_url)["completions"] - before
            print(
                json.dumps(
                    {
                        "workers": args.workers,
                        "rows": rows,
                        "killed_holding_claims": held_by_victim,
                        "rows_lost": left,
                        "judgments_stored": stored,
                        "judgments_over_rows": stored - (total - left),
                        "calls": calls,
                        "calls_repeated": calls - CALLS_PER_ROW * rows,
                        "calls_in_flight_bound": args.concurrency * CALLS_PER_ROW,
                        "others_ok": all(p.returncode == 0 for p in procs[1:]),
                        "others_judged": sum(json.loads(out)["judged"] for out, _ in outs if out),
                        "wall_s": round(wall, 1),
                        "lease_s": args.lease,
                    }
                ),
                flush=True,
            )
    finally:
        mock.terminate()
        mock.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make")
    made.add_argument("--rows", type=int, required=True)
    made.add_argument("--db", required=True)
    for name in ("measure", "kill"):
        p = sub.add_parser(name)
        p.add_argument("--db", required=True)
        p.add_argument("--latency-ms", type=float, default=200.0)
        p.add_argument("--concurrency", type=int, default=8)
        if name == "measure":
            p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
        else:
            p.add_argument("--workers", type=int, default=4)
            p.add_argument("--lease", type=float, default=10.0)
    args = parser.parse_args()
    if args.command == "make":
        make_judged(args.db, args.rows)
        print(json.dumps({"rows": unjudge(args.db)}))
    elif args.command == "measure":
        measure(args)
    else:
        kill(args)


if __name__ == "__main__":
    main()
