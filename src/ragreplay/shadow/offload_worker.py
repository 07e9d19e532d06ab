"""The shadow's offload worker process (``python -m ragreplay.shadow.offload_worker``, started by
:class:`~ragreplay.shadow.offload.Offload`): calls the functions it is sent, at a lower CPU priority."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from ragreplay.shadow.offload import WORKER_NICE, receive, send


def serve() -> None:
    """The worker: read ``(fn, args)`` pickles from stdin, answer ``(ok, value)`` pickles, until EOF."""
    with contextlib.suppress(AttributeError, OSError):  # no os.nice on Windows
        os.nice(WORKER_NICE)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the called code prints goes to stderr, not into the answers
    source = sys.stdin.buffer
    while True:
        try:
            fn, args = receive(source)
        except EOFError:
            return
        try:
            answer: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:
            answer = (False, exc)
        try:
            send(out, answer)
        except Exception as exc:  # an answer or exception that does not pickle
            send(out, (False, RuntimeError(f"unpicklable result: {exc!r}")))


if __name__ == "__main__":
    serve()
