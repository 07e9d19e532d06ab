"""Building tens of thousands of small objects at once (a busy week of judged shadow rows) with the cyclic
garbage collector held off.

Such a build allocates hundreds of thousands of acyclic models, dicts and lists; each time the heap has grown by
a quarter the collector walks all of it again: 2.7-2.9 of the ~8 seconds it took to read and summarise a 7-day
window of 46,585 shadow rows (docs/benchmarks.md). Held off for the build, it walks it once afterwards.
Reference counting still frees everything as usual; only reference cycles wait until the block ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection inside the block. Blocks may nest and overlap across threads:
    collection comes back, if it was on when the first began, when the last one ends."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
