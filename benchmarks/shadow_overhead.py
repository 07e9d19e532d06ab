"""What the shadow adds to the champion's path: N requests through ``Shadow.handle`` vs the champion called
directly, with challengers that are slow, sometimes fail and sometimes hang.

python benchmarks/shadow_overhead.py --requests 5000 [--rate 1.0] [--db postgresql://...]

The champion is a fast in-process target (one ``await asyncio.sleep(0)``). Challenger "slow" answers after
20 ms; "flaky" fails every 10th call and hangs (30 s) every 50th, so timeouts happen during the run
(``--timeout``, default 0.5 s, keeps the run short; hangs outlast it either way). Both phases pace requests
1 ms apart on one event loop, so the shadow's background work competes with the champion exactly as it would
in an app. Prints one JSON object; exits 1 if a champion call failed or the row counts do not add up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragreplay.core.types import Answer, Case, RetrievedChunk
from ragreplay.shadow import Shadow, ShadowLog, live_case
from ragreplay.shadow.sampler import Sampler
from ragreplay.store import Store

ANSWER = Answer(text="Ja, volgens artikel 12 van de CAO.", contexts=(RetrievedChunk(id="cao#12"),))


class Champion:
    """A fast in-process RAG: yields to the loop once, then answers."""

    name = "champion"
    version = "v1"

    async def answer(self, question: str, case: Case) -> Answer:
        """The canned answer."""
        await asyncio.sleep(0)
        return ANSWER

    async def aclose(self) -> None:
        """Nothing to release."""


class Challenger:
    """Answers after ``delay_s``; with ``flaky``, every 10th call raises and every 50th hangs for 30 s."""

    def __init__(self, name: str, delay_s: float, flaky: bool) -> None:
        self.name = name
        self.version = "v2"
        self._delay = delay_s
        self._flaky = flaky
        self._n = 0

    async def answer(self, question: str, case: Case) -> Answer:
        """A slow answer, an error, or a hang."""
        self._n += 1
        if self._flaky and self._n % 50 == 0:
            await asyncio.sleep(30)
        await asyncio.sleep(self._delay)
        if self._flaky and self._n % 10 == 0:
            raise ConnectionError("challenger index offline")
        return Answer(text="Ja.", contexts=(RetrievedChunk(id="cao#12"),), latency_ms=self._delay * 1000)

    async def aclose(self) -> None:
        """Nothing to release."""


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``."""
    return statistics.quantiles(values, n=1000, method="inclusive")[round(q * 1000) - 1]


async def timed(n: int, call: Any) -> tuple[list[float], int]:
    """Latencies (ms) of ``n`` paced calls, and how many raised."""
    out, errors = [], 0
    for i in range(n):
        start = time.perf_counter()
        try:
            await call(i)
        except Exception:
            errors += 1
        out.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(0.001)
    return out, errors


async def run(n: int, rate: float, timeout_s: float, db: str) -> dict[str, Any]:
    """Both phases on one loop; the figures as a dict."""
    champion = Champion()
    cases = [live_case(f"r{i}", f"vraag {i}", f"u{i % 97}", {"department": "hr"}) for i in range(n)]
    direct, direct_errors = await timed(n, lambda i: champion.answer(cases[i].query, cases[i]))

    store = Store.open(db)
    log = ShadowLog(store)
    sampler = Sampler(base_rate=rate, seed=7)
    challengers = {"slow": Challenger("slow", 0.02, False), "flaky": Challenger("flaky", 0.02, True)}
    shadow = Shadow(
        champion, challengers, sampler=sampler, log=log, salt="bench", challenger_timeout_s=timeout_s
    )
    through, shadow_errors = await timed(
        n, lambda i: shadow.handle(f"vraag {i} mail lisa@acme.nl", user_id=f"u{i % 97}", tags={"d": "hr"})
    )
    await shadow.aclose(timeout_s=timeout_s + 5)
    stats = shadow.stats()
    stored = store.shadow_rows.count_shadow_rows()
    store.close()
    expected_rows = (stats.sampled - stats.dropped) * len(challengers)
    p50_d, p99_d = pct(direct, 0.5), pct(direct, 0.99)
    p50_s, p99_s = pct(through, 0.5), pct(through, 0.99)
    return {
        "requests": n,
        "store": db.split(":", 1)[0] if "://" in db else "sqlite",
        "direct_ms": {"p50": round(p50_d, 4), "p99": round(p99_d, 4)},
        "shadow_ms": {"p50": round(p50_s, 4), "p99": round(p99_s, 4)},
        "added_ms": {"p50": round(p50_s - p50_d, 4), "p99": round(p99_s - p99_d, 4)},
        "champion_errors": direct_errors + shadow_errors,
        "stats": stats.as_dict(),
        "rows_expected": expected_rows,
        "rows_in_store": stored,
        "rows_add_up": stats.rows_written == stats.rows_offered - stats.rows_dropped - stats.rows_lost
        and stats.rows_offered == expected_rows
        and stored == stats.rows_written,
    }


def main() -> None:
    """Parse arguments, run, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1.0, help="sampling rate (1.0 = every request)")
    parser.add_argument("--timeout", type=float, default=0.5, help="challenger timeout in seconds")
    parser.add_argument("--db", default="", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'shadow.db'}"
        result = asyncio.run(run(args.requests, args.rate, args.timeout, db))
    print(json.dumps(result, indent=2))
    if result["champion_errors"] or not result["rows_add_up"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
