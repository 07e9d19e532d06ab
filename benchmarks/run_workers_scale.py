"""`ragreplay run --workers N`: cases/s of one replay run shared by N worker processes against one store, beside
a plain `run`, with a fake judge of fixed latency (the endpoint-bound case; no network, no mock server).

    python benchmarks/run_workers_scale.py --db postgresql://postgres@127.0.0.1:5432/bench_run_workers \
        --conversations 200 --latency-ms 200 --concurrency 4 --workers 0 1 2 0

The shipped HR sample (``ragreplay.demo.sample.build_sample``: conversations with follow-ups, some cases the
candidate fails) is ingested once; each measurement is a new run of all its cases (``--fresh``) with the logged
candidate target and ``--judge fake:default`` (every model call, rewrites and judgments, waits ``--latency-ms``;
the model cache off and the pinned rewrites deleted before each run, so every run makes every call).
``--workers 0`` is a plain ``run`` (no claims), the baseline. One JSON line per N: wall time (start to the last
exit, the processes' start-up included), the span of the run's results (the first case's final result saved to
the last's: without the start-up) and cases/s over each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete, func, select

from ragreplay.demo.sample import build_sample
from ragreplay.store import Store
from ragreplay.store.schema import results, rewrites, work_claims

TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


def cli(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "ragreplay.cli.app", *args], env=env, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"ragreplay {' '.join(args[:1])} failed:\n{proc.stderr.decode()[-2000:]}")


def unpin(db: str) -> None:
    """The pinned rewrites and any claims deleted: every run rewrites its follow-ups anew, as the first does."""
    with Store.open(db) as store, store._engine.begin() as conn:
        conn.execute(delete(rewrites))
        conn.execute(delete(work_claims))


def span(db: str, run_id: str) -> tuple[float, int, int]:
    """(seconds from the first case's result saved to the last's, results done, results errored)."""
    with Store.open(db) as store, store._engine.connect() as conn:
        created, last = conn.execute(
            select(func.min(results.c.updated_at), func.max(results.c.updated_at)).where(
                results.c.run_id == run_id
            )
        ).one()
        by_status: dict[str, int] = dict(
            conn.execute(
                select(results.c.status, func.count())
                .where(results.c.run_id == run_id)
                .group_by(results.c.status)
            ).all()
        )
    created = created.replace(tzinfo=None)
    last = last.replace(tzinfo=None)
    return (last - created).total_seconds(), int(by_status.get("done", 0)), int(by_status.get("error", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--conversations", type=int, default=120)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build_sample(args.conversations).write(folder)
        (folder / "candidate.yaml").write_text(TARGET)
        env = {**os.environ, "RAGREPLAY_FAKE_LATENCY_MS": str(args.latency_ms)}
        cli(["ingest", str(folder / "production.jsonl"), "--db", args.db], env)
        base: float | None = None
        for n in args.workers:
            run = [
                "run",
                "--target",
                str(folder / "candidate.yaml"),
                "--judge",
                "fake:default",
                "--db",
                args.db,
            ]
            run += ["--cache", "off", "--fresh", "--concurrency", str(args.concurrency), "--format", "json"]
            run += [] if n == 0 else ["--workers", str(n)]
            unpin(args.db)
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "ragreplay.cli.app", *run], env=env, capture_output=True
            )
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                raise SystemExit(proc.stderr.decode()[-2000:])
            summary = json.loads(proc.stdout)
            seconds, done, errors = span(args.db, summary["run_id"])
            cases = done + errors
            rate = cases / seconds
            base = base or rate
            print(
                json.dumps(
                    {
                        "workers": n,
                        "cases": cases,
                        "errors": errors,
                        "status": summary["status"],
                        "wall_s": round(wall, 2),
                        "cases_per_s_wall": round(cases / wall, 1),
                        "span_s": round(seconds, 2),
                        "cases_per_s": round(rate, 1),
                        "speed_up": round(rate / base, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
