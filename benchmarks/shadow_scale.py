"""The shadow dashboard and report at production volume: a store of N judged shadow rows over 30 days, then the
dashboard's pages (in process, Starlette's TestClient against the real app), ``shadow report --since 7d`` and a
purge of the month, each timed with its process's peak memory.

    python benchmarks/shadow_scale.py make --rows 200000 --db /tmp/shadow200k.db
    python benchmarks/shadow_scale.py upgrade --db /tmp/shadow200k.db      # a store made by an older ragreplay
    python benchmarks/shadow_scale.py measure --db /tmp/shadow200k.db [--purge]

``make`` is :func:`benchmarks.regset_scale.make` (Zipf-like questions, judgments in every stratum, feedback on
some; rows over the 30 days before 2026-12-01), then, where this ragreplay keeps rollups, the language checks
that judgments made by ``make`` lack are caught up once, so the store is as ``shadow judge`` leaves it.
``upgrade`` opens a store made by an older ragreplay (migration 17 backfills the rollups) and catches up the
language checks, timing both. ``measure`` prints one JSON line; each figure is taken in a fresh interpreter
(``wall_s`` includes its start-up, ``peak_mb`` is its peak RSS). The 7-day window is the 7 days before
2026-12-01 (the store's last day), as an ISO date, so the figures do not depend on today's date. ``--no-30d``
skips the 30-day overview (it took minutes and gigabytes before the rollups). ``--purge``
(destructive: run it last, on a copy) times ``shadow purge`` of everything older than 2026-12-01, the month.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regset_scale import NOW, make

SINCE = (NOW - timedelta(days=7)).date().isoformat()
"""The window of the 7 days before the store's end, as a date (midnight UTC): it needs no escaping in a URL."""

_PAGES = f"""
import json, resource, sys, time, warnings
from ragreplay.web import create_app
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient
db, since, wide = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
out = {{}}
with TestClient(create_app(db, cache_s=0)) as client:
    for name, path in [
        ("overview", "/?since=" + since),
        ("index_json", "/index.json?since=" + since),
        ("rows", "/rows?since=" + since),
        ("rows_json_500", "/rows.json?limit=500&since=" + since),
        ("rows_disagree", "/rows?outcome=disagree&since=" + since),
        ("overview_30d", "/?since=" + "{(NOW - timedelta(days=30)).date().isoformat()}"),
    ]:
        if name == "overview_30d" and not wide:
            continue
        t = time.perf_counter()
        r = client.get(path)
        out[name + "_s"] = round(time.perf_counter() - t, 3)
        out[name + "_status"] = r.status_code
        if name == "index_json":
            out["index_json_bytes"] = len(r.content)
        if name == "rows_json_500":
            first = r.json()["rows"][0]["url"]
    t = time.perf_counter()
    client.get(first)
    out["one_row_s"] = round(time.perf_counter() - t, 3)
out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""


def _run(args: Sequence[str]) -> tuple[float, int, str]:
    """Run ``args`` in a fresh process: (wall seconds, its own peak RSS in MB, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed ({status})")
    return wall, round(usage.ru_maxrss / 1024), out


def catch_up(db: str) -> dict[str, Any]:
    """Open the store (migrations run) and catch up the language checks; timed, where rollups exist."""
    from ragreplay.store import Store

    t = time.perf_counter()
    with Store.open(db) as store:
        opened = time.perf_counter() - t
        try:
            from ragreplay.shadow.rollup_summary import rollup_figures
        except ImportError:
            return {"open_s": round(opened, 2), "rollups": False}
        t = time.perf_counter()
        rollup_figures(store, NOW - timedelta(days=3650))
        return {"open_s": round(opened, 2), "language_catch_up_s": round(time.perf_counter() - t, 2)}


def measure(db: str, purge: bool, wide: bool = True) -> dict[str, Any]:
    """Every figure of the module docstring, each in a fresh interpreter."""
    py = sys.executable
    result: dict[str, Any] = {"db": db.split("/")[-1], "since": SINCE}
    wall, peak, out = _run([py, "-c", _PAGES, db, SINCE, "1" if wide else "0"])
    result["dashboard"] = {**json.loads(out), "process_wall_s": round(wall, 2), "peak_mb": peak}
    for fmt in ("text", "json"):
        wall, peak, out = _run(
            [py, "-m", "ragreplay", "shadow", "report", "--db", db, "--since", SINCE, "--format", fmt]
        )
        result[f"report_{fmt}"] = {"wall_s": round(wall, 2), "peak_mb": peak, "bytes": len(out.encode())}
    if purge:
        args = [
            py,
            "-m",
            "ragreplay",
            "shadow",
            "purge",
            "--db",
            db,
            "--older-than",
            NOW.isoformat(),
            "--yes",
        ]
        wall, peak, out = _run(args)
        result["purge_month"] = {"wall_s": round(wall, 2), "peak_mb": peak}
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``make``, ``upgrade`` or ``measure``; prints JSON."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="write a store of N judged shadow rows over 30 days")
    m.add_argument("--rows", type=int, required=True)
    m.add_argument("--db", required=True)
    m.add_argument("--seed", type=int, default=0)
    u = sub.add_parser("upgrade", help="migrate a store made by an older ragreplay and catch up")
    u.add_argument("--db", required=True)
    s = sub.add_parser("measure", help="time the dashboard, the report (and a purge of the month)")
    s.add_argument("--db", required=True)
    s.add_argument("--purge", action="store_true", help="also purge the month (destructive: run on a copy)")
    s.add_argument("--no-30d", action="store_true", help="skip the 30-day overview (before rollups: minutes)")
    args = parser.parse_args(argv)
    if args.command == "make":
        t = time.perf_counter()
        make(args.db, args.rows, args.seed)
        made = time.perf_counter() - t
        print(json.dumps({"rows": args.rows, "make_s": round(made, 1), **catch_up(args.db)}))
    elif args.command == "upgrade":
        print(json.dumps(catch_up(args.db)))
    else:
        print(json.dumps(measure(args.db, args.purge, wide=not args.no_30d)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
