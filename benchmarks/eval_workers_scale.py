"""`ragreplay eval --workers N`: rows/s of one eval run shared by N worker processes against one store, beside a
plain `eval`, with a fake judge of fixed latency (the endpoint-bound case; no network, no mock server).

    python benchmarks/eval_workers_scale.py --db postgresql://postgres@127.0.0.1:5432/bench_eval_workers \
        --rows 800 --latency-ms 200 --concurrency 4 --workers 0 1 2 0

A dataset of ``--rows`` rows (answer, reference, contexts, judgments: every metric applies) is written once;
each measurement is a new eval run of it (``--fresh``) with ``--judge fake:default`` (every judge call waits
``--latency-ms``; the model cache off, so every run makes every call). ``--workers 0`` is a plain ``eval`` (no
claims), the baseline. One JSON line per N: wall time (start to the last exit, the processes' start-up
included), the span of the run's rows (the first row's scores saved to the last's: without the start-up) and
rows/s over each.
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

from sqlalchemy import func, select

from ragreplay.store import Store
from ragreplay.store.schema import eval_rows


def write_rows(path: Path, n: int) -> None:
    """``n`` rows of a small made-up catalogue: every metric applies to each."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "id": f"r{i:05d}",
                "question": f"What is item {i}?",
                "answer": f"Item {i} is a widget. It is {'blue' if i % 3 else 'red'}.",
                "reference": f"Item {i} is a widget.",
                "contexts": [{"id": "c1", "text": f"Item {i} is a widget."}, {"id": "c2", "text": "Menu"}],
                "judgments": {"c1": 2},
                "tags": ["even" if i % 2 == 0 else "odd"],
            }
            out.write(json.dumps(row) + "\n")


def span(db: str, eval_id: str) -> tuple[float, int, int]:
    """(seconds from the first row's scores saved to the last's, rows scored, rows errored)."""
    with Store.open(db) as store, store._engine.connect() as conn:
        first, last, scored, errored = conn.execute(
            select(
                func.min(eval_rows.c.updated_at),
                func.max(eval_rows.c.updated_at),
                func.count().filter(eval_rows.c.error.is_(False)),
                func.count().filter(eval_rows.c.error.is_(True)),
            ).where(eval_rows.c.eval_id == eval_id)
        ).one()
    return (last.replace(tzinfo=None) - first.replace(tzinfo=None)).total_seconds(), int(scored), int(errored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        write_rows(data, args.rows)
        env = {**os.environ, "RAGREPLAY_FAKE_LATENCY_MS": str(args.latency_ms)}
        base: float | None = None
        for n in args.workers:
            command = ["eval", str(data), "--judge", "fake:default", "--db", args.db, "--cache", "off"]
            command += ["--fresh", "--concurrency", str(args.concurrency), "--format", "json"]
            command += [] if n == 0 else ["--workers", str(n)]
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "ragreplay.cli.app", *command], env=env, capture_output=True
            )
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                raise SystemExit(proc.stderr.decode()[-2000:])
            run = json.loads(proc.stdout)["run"]
            seconds, scored, errored = span(args.db, run["id"])
            rows = scored + errored
            rate = rows / seconds
            base = base or rate
            print(
                json.dumps(
                    {
                        "workers": n,
                        "rows": rows,
                        "errors": errored,
                        "status": run["status"],
                        "wall_s": round(wall, 2),
                        "rows_per_s_wall": round(rows / wall, 1),
                        "span_s": round(seconds, 2),
                        "rows_per_s": round(rate, 1),
                        "speed_up": round(rate / base, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
