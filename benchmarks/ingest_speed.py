"""Ingest speed and memory: generate a canonical log of N messages, ingest it, report messages/s and peak RSS.

python benchmarks/ingest_speed.py --messages 200000 [--db postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from ragreplay.ingest import ingest_file
from ragreplay.store import Store


def write_log(path: Path, n_messages: int) -> int:
    """A log of four-message conversations (two labelled turns each); returns the conversation count."""
    n_convs = n_messages // 4
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_convs):
            conv = {
                "id": f"c{i:07d}",
                "tags": {"department": ["hr", "finance", "it"][i % 3]},
                "messages": [
                    {"role": "human", "content": f"How many leave days does policy {i} give?"},
                    {
                        "role": "ai",
                        "content": f"Policy {i} gives {i % 30} days.",
                        "feedback": "good",
                        "retrieved": [{"id": f"doc{i % 500}#1", "score": 0.8}],
                    },
                    {"role": "human", "content": "And for part-timers?"},
                    {"role": "ai", "content": "Pro rata.", "feedback": "bad"},
                ],
            }
            fh.write(json.dumps(conv) + "\n")
    return n_convs


def main() -> None:
    """Run the benchmark and print a Markdown table row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        write_log(log, args.messages)
        size_mb = log.stat().st_size / 1e6
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        store = Store.open(args.db or str(Path(tmp) / "ingest.db"))
        try:
            start = time.perf_counter()
            summary = ingest_file(log, store)
            seconds = time.perf_counter() - start
        finally:
            store.close()
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    backend = "PostgreSQL" if args.db and args.db.startswith("postgres") else "SQLite"
    print(
        "| store | messages | file (MB) | cases | seconds | messages/s | projected 1M messages (s) | "
        "peak RSS growth (MB) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {backend} | {args.messages} | {size_mb:.1f} | {summary.cases} | {seconds:.1f} | "
        f"{args.messages / seconds:,.0f} | {1e6 / (args.messages / seconds):.0f} | {rss_after - rss_before:.0f} |"
    )


if __name__ == "__main__":
    main()
