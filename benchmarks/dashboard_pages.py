"""Response times of the shadow dashboard's pages on a big shadow log, in process (Starlette's TestClient).

python benchmarks/dashboard_pages.py --db big.db [--rows 200000] [--days 30] [--reps 3] [--report]

An empty store is first filled with ``--rows`` synthetic judged rows spread evenly at random over the last
``--days`` days (two challengers, two tags; on PostgreSQL the tables are then analysed, as autovacuum would);
a store that holds rows already is used as it is. Each page is fetched ``--reps`` times (the 7-day overview
once) with the overview cache off, and the best time is kept. Prints one JSON object: milliseconds per page.
With ``--report`` it also runs ``ragreplay shadow report --since 7d --format json`` (output thrown away) and the
figures-only summary of the same window (``shadow_figures``), each in a fresh interpreter: wall seconds, start-up
included, and the process's peak RSS (VmHWM, Linux).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from ragreplay.core.shadow import ShadowAnswer, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Fit
from ragreplay.store import Store
from ragreplay.web import create_app

with warnings.catch_warnings():  # this starlette deprecates httpx for its test client; httpx serves it fine
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

PAGES = [
    "/healthz",
    "/?since=7d",
    "/index.json?since=7d",
    "/?since=24h",
    "/rows",
    "/rows?challenger=b&outcome=disagree",
    "/rows?tag=dept%3Dhr",
    "/rows?tag=dept%3Dnone",
    "/rows?outcome=error",
    "/rows?limit=500",
]
BATCH = 2000
CHILD = """
import contextlib, json, os, sys
db, what = sys.argv[1], sys.argv[2]
if what == "report":
    from ragreplay.cli.app import main
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        assert main(["shadow", "report", "--db", db, "--since", "7d", "--format", "json"]) == 0
else:
    from ragreplay.shadow.judging import parse_since, shadow_figures
    from ragreplay.store import Store
    with Store.open(db) as store:
        shadow_figures(store, parse_since("7d"), "7d")
# VmHWM, not ru_maxrss: Linux carries the parent's high-water mark into ru_maxrss across fork and exec
status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
print(json.dumps({"peak_rss_mb": round(int(status) / 1024)}))
"""


def seed(store: Store, url: str, n: int, days: int, now: datetime) -> float:
    """Write ``n`` judged rows over the last ``days`` days; returns the seconds it took."""
    rng = random.Random(1)
    started = time.perf_counter()
    for start in range(0, n, BATCH):
        rows, records = [], []
        for i in range(start, min(n, start + BATCH)):
            rid, challenger = f"{i:08d}", "b" if i % 2 else "c"
            rows.append(
                ShadowRow(
                    id=rid,
                    ts=now - timedelta(seconds=rng.uniform(0, days * 86400)),
                    request_id=f"q{i}",
                    query=f"question {i} about leave days",
                    tags={"dept": rng.choice(["hr", "it", "fin", "ops"]), "lang": rng.choice(["en", "nl"])},
                    challenger=challenger,
                    champion_answer=ShadowAnswer(
                        text="champion answer " * 20,
                        chunk_ids=["a#1", "b#2"],
                        latency_ms=rng.uniform(50, 500),
                        cost_usd=0.001,
                    ),
                    challenger_answer=ShadowAnswer(
                        text="challenger answer " * 20,
                        chunk_ids=["c#1"],
                        latency_ms=rng.uniform(50, 500),
                        cost_usd=0.002,
                        error="TimeoutError" if i % 997 == 0 else None,
                    ),
                )
            )
            records.append(
                ShadowJudgmentRecord(
                    row_id=rid,
                    challenger=challenger,
                    judged_at=now,
                    fit=None
                    if i % 997 == 0
                    else rng.choices([Fit.FIT, Fit.NO_FIT, Fit.UNSCORABLE], [6, 3, 1])[0],
                    winner=None if i % 997 == 0 else rng.choice(["x", "y", "tie", None]),
                    consistent=True,
                    judge="local",
                    judge_prompt_version="p",
                    fit_judge="local",
                    fit_judge_prompt_version="f",
                    error="b: TimeoutError" if i % 997 == 0 else None,
                    payload={"reason": "synthetic", "order": "both"},
                )
            )
        store.shadow_rows.write_shadow_rows(rows)
        store.shadow_judgments.save_shadow_judgments(records)
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            for table in ("shadow_rows", "shadow_judgments", "shadow_feedback"):
                conn.execute(f"ANALYZE {table}")
    return time.perf_counter() - started


def best_ms(client: TestClient, path: str, reps: int) -> float:
    """The fastest of ``reps`` fetches of ``path``, in milliseconds (each must answer 200)."""
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        response = client.get(path)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"{path}: HTTP {response.status_code}: {response.text[:300]}")
        best = min(best, elapsed)
    return 1000 * best


def child_run(db: str, what: str) -> dict[str, Any]:
    """Wall seconds and peak RSS of ``what`` (``report`` or ``figures``) in a fresh interpreter."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, db, what], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{what}: exit {out.returncode}: {out.stderr[-2000:]}")
    return {"s": round(elapsed, 2), **json.loads(out.stdout.splitlines()[-1])}


def main() -> None:
    """Seed when empty, time every page, print the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--db", required=True, help="store URL or SQLite path (empty, or seeded by this script)"
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--report", action="store_true", help="also time `shadow report` and figures only")
    args = parser.parse_args()
    now = datetime.now(UTC)
    result: dict[str, Any] = {}
    with Store.open(args.db) as store:
        if store.shadow_rows.count_shadow_rows() == 0:
            result["seed_s"] = round(seed(store, args.db, args.rows, args.days, now), 1)
        result["rows"] = store.shadow_rows.count_shadow_rows()
        result["backend"] = "postgresql" if args.db.startswith("postgresql") else "sqlite"
    with TestClient(create_app(args.db, cache_s=0)) as client:
        result["judged_in_7d"] = client.get("/index.json?since=7d").json()["judged"]
        newest = client.get("/rows.json?limit=1").json()["rows"][0]["url"]
        result["ms"] = {
            path: round(best_ms(client, path, 1 if "since=7d" in path else args.reps), 1) for path in PAGES
        }
        result["ms"]["/rows/ID"] = round(best_ms(client, newest, args.reps), 1)
        following = client.get("/rows.json").json()["links"]["next_json"]
        pages = 0
        started = time.perf_counter()
        while following is not None and pages < 20:
            following = client.get(following).json()["links"]["next_json"]
            pages += 1
        result["ms"]["each later page of /rows.json"] = round(
            1000 * (time.perf_counter() - started) / max(1, pages), 1
        )
    if args.report:
        result["shadow report --since 7d --format json"] = child_run(args.db, "report")
        result["figures only (shadow_figures)"] = child_run(args.db, "figures")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
