"""Per-row CPU of ``ragreplay eval`` (what ``eval_side_by_side.py`` runs), optionally under cProfile.

The rows of :func:`eval_side_by_side.eval_rows`, scored by :func:`~ragreplay.evaluation.run.evaluate_dataset`
against the mock endpoint at ``--latency-ms`` (default 0: no waiting, so the process CPU is the per-row work),
sacrebleu imported before the clock starts. Prints process CPU per row; ``--top N`` also prints the event loop
thread's top functions by own time and by cumulative time.

    python benchmarks/eval_profile.py --rows 500 --top 30
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import tempfile
import time
from pathlib import Path

from eval_side_by_side import JUDGE, eval_rows
from ragreplay.evaluation.run import evaluate_dataset
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.metrics.lexical import load_backends
from ragreplay.providers.config import ProviderConfig
from ragreplay.providers.pricing import Price
from ragreplay.settings import Settings
from ragreplay.store import Store
from replay_throughput import start_mock


async def _evaluate(store: Store, settings: Settings, rows_file: Path) -> None:
    """One fresh eval run; nothing returned (``asyncio.run`` would repr a big result on Python 3.11)."""
    rows = read_eval_dataset(rows_file)
    await evaluate_dataset(store, settings, rows, str(rows_file), JUDGE, fresh=True, env={})


def main() -> None:
    """Run once and print the CPU per row (and the profile with ``--top``)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--top", type=int, default=0, help="print this many functions under cProfile")
    args = parser.parse_args()
    base_url, mock = start_mock(args.latency_ms)
    profile = cProfile.Profile(time.thread_time)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows_file = Path(tmp) / "rows.jsonl"
            rows_file.write_text("".join(json.dumps(r) + "\n" for r in eval_rows(args.rows)))
            settings = Settings(
                db=str(Path(tmp) / "eval.db"),
                concurrency=16,
                providers={"mock": ProviderConfig(base_url=base_url, max_concurrency=16)},
                prices={JUDGE: Price(0.4, 1.6)},
            )
            load_backends()
            store = Store.open(settings.db)
            try:
                cpu = time.process_time()
                if args.top:
                    profile.enable()
                asyncio.run(_evaluate(store, settings, rows_file))
                profile.disable()
                used = time.process_time() - cpu
            finally:
                store.close()
    finally:
        mock.terminate()
        mock.wait(10)
    print(
        f"{args.rows} rows at {args.latency_ms:g} ms: process CPU {used:.3f} s, {used / args.rows * 1000:.3f} ms/row"
    )
    if args.top:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
