"""Ingest speed and memory: generate a canonical log of N messages, ingest it, report messages/s, CPU seconds,
peak RSS and the store's size.

python benchmarks/ingest_speed.py --messages 200000 [--db postgresql://...]
python benchmarks/ingest_speed.py --messages 20000 --one-conversation   # one conversation of N messages
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


def write_one_conversation(path: Path, n_messages: int) -> int:
    """A log of one conversation of ``n_messages`` messages, every answer labelled; returns 1."""
    messages: list[dict[str, object]] = []
    for i in range(n_messages // 2):
        messages.append({"role": "human", "content": f"And what does policy {i} say about leave?"})
        messages.append(
            {"role": "ai", "content": f"Policy {i} gives {i % 30} days.", "feedback": ["good", "bad"][i % 2]}
        )
    path.write_text(
        json.dumps({"id": "one-long-conversation", "messages": messages}) + "\n", encoding="utf-8"
    )
    return 1


def store_mb(db: str | None, tmp: str) -> str:
    """The SQLite store's size in MB (with its write-ahead log), or '-' for a server."""
    if db is not None:
        return "-"
    return f"{sum(p.stat().st_size for p in Path(tmp).glob('ingest.db*')) / 1e6:.1f}"


def main() -> None:
    """Run the benchmark and print a Markdown table row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--db", default=None)
    parser.add_argument("--one-conversation", action="store_true", help="all messages in one conversation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        (write_one_conversation if args.one_conversation else write_log)(log, args.messages)
        size_mb = log.stat().st_size / 1e6
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        store = Store.open(args.db or str(Path(tmp) / "ingest.db"))
        try:
            start, cpu_start = time.perf_counter(), time.process_time()
            summary = ingest_file(log, store)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        finally:
            store.close()
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size = store_mb(args.db, tmp)
    backend = "PostgreSQL" if args.db and args.db.startswith("postgres") else "SQLite"
    shape = "one conversation" if args.one_conversation else "4 per conversation"
    print(
        "| store | messages | shape | file (MB) | cases | seconds | CPU seconds | messages/s | "
        "projected 1M messages (s) | peak RSS growth (MB) | store (MB) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {backend} | {args.messages} | {shape} | {size_mb:.1f} | {summary.cases} | {seconds:.1f} | {cpu:.1f} | "
        f"{args.messages / seconds:,.0f} | {1e6 / (args.messages / seconds):.0f} | {rss_after - rss_before:.0f} | "
        f"{size} |"
    )


if __name__ == "__main__":
    main()
