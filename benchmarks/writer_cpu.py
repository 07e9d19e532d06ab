"""The store writer thread's own CPU during a cold replay or an eval run, unprofiled.

``time.thread_time`` is summed around every ``Store.write_batch`` (the writer's thread does nothing else), while
``replay_scale.py cpu`` or ``eval_profile.py`` runs as usual and prints its process CPU:

    python benchmarks/writer_cpu.py replay --cases 2000 --concurrency 64
    python benchmarks/writer_cpu.py eval --rows 500
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ragreplay.store import Store


def main() -> None:
    """Run one replay or eval with ``Store.write_batch`` timed; print the writer's CPU per case or row."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["replay", "eval"])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rows", type=int, default=500)
    args = parser.parse_args()
    spent = [0.0, 0]
    write_batch = Store.write_batch

    def timed(self: Store, batch: Any) -> Any:
        start = time.thread_time()
        try:
            return write_batch(self, batch)
        finally:
            spent[0] += time.thread_time() - start
            spent[1] += 1

    Store.write_batch = timed  # type: ignore[method-assign]
    if args.what == "replay":
        import replay_scale

        replay_scale.cpu(args.cases, [args.concurrency])
        n, unit = args.cases, "case"
    else:
        import eval_profile

        sys.argv = [sys.argv[0], "--rows", str(args.rows)]
        eval_profile.main()
        n, unit = args.rows, "row"
    print(f"writer thread: {spent[0]:.3f} s in {spent[1]} batches, {spent[0] / n * 1000:.3f} ms a {unit}")


if __name__ == "__main__":
    main()
