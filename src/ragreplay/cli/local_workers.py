"""``--workers N`` on one machine: N worker processes of the same command, each claiming its items from the
store (:mod:`ragreplay.jobs.claims`), exactly as N machines would; this process starts them, shows the job's
progress from the store and adds up what each reports (its ``--format json`` summary)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ragreplay.cli.common import count_progress, err_console

MAX_WORKERS = 64
"""The most worker processes one command starts (more machines each run their own ``--workers``)."""
POLL_S = 0.5
STOP_WAIT_S = 30.0
"""How long the workers get to release their claims after Ctrl-C before they are killed."""


@dataclass
class WorkerOutcome:
    """One worker process's exit code, its JSON summary (``None`` when it printed none) and its stderr's tail."""

    code: int
    summary: dict[str, Any] | None
    stderr_tail: str


def check_workers(workers: int | None) -> None:
    """Refuse a ``--workers`` outside 1..MAX_WORKERS."""
    from ragreplay.errors import ConfigError

    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(
            f"--workers {workers}: must be 1 to {MAX_WORKERS}. Fix: on several machines, run the command with "
            "--workers on each, against one PostgreSQL store"
        )


def check_lease(lease: float) -> None:
    """Refuse a ``--lease`` under a second or over an hour."""
    from ragreplay.errors import ConfigError

    if not 1 <= lease <= 3600:
        raise ConfigError(f"--lease {lease}: must be 1 to 3600 seconds (the default, 60, suits most jobs)")


def run_local_workers(
    argv: Sequence[str], n: int, what: str, total: int, left: Callable[[], int]
) -> list[WorkerOutcome]:
    """Run ``ragreplay <argv>`` (one worker's command, printing a JSON summary) as ``n`` processes and wait for
    them, with a progress bar of ``total`` items that reads ``left()`` (items still to do) from the store."""
    command = [sys.executable, "-m", "ragreplay.cli.app", *argv]
    with tempfile.TemporaryDirectory(prefix="ragreplay-workers-") as folder:
        logs = [Path(folder) / f"worker{i}.err" for i in range(n)]
        outs = [Path(folder) / f"worker{i}.out" for i in range(n)]
        handles: list[IO[bytes]] = []
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for out, log in zip(outs, logs, strict=True):
                handles += [out.open("wb"), log.open("wb")]
                procs.append(subprocess.Popen(command, stdout=handles[-2], stderr=handles[-1]))
            _watch(procs, what, total, left)
        except BaseException:
            _stop(procs)
            raise
        finally:
            for handle in handles:
                handle.close()
        return [_outcome(p, out, log) for p, out, log in zip(procs, outs, logs, strict=True)]


def _watch(procs: list[subprocess.Popen[bytes]], what: str, total: int, left: Callable[[], int]) -> None:
    bar = count_progress()
    task = bar.add_task(f"{what} ({len(procs)} workers)", total=total)
    with bar:
        while any(p.poll() is None for p in procs):
            # the store away for a moment: the workers will say so if it stays away
            with contextlib.suppress(Exception):
                bar.update(task, completed=max(0, total - left()))
            time.sleep(POLL_S)
        bar.update(task, completed=max(0, total - left()))


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Ctrl-C (or a failure here): each worker is interrupted, so it releases its claims, then waited for."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + STOP_WAIT_S
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _outcome(proc: subprocess.Popen[bytes], out: Path, log: Path) -> WorkerOutcome:
    summary: dict[str, Any] | None = None
    try:
        parsed = json.loads(out.read_text(encoding="utf-8", errors="replace") or "null")
        summary = parsed if isinstance(parsed, dict) else None
    except ValueError:
        summary = None
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    return WorkerOutcome(int(proc.returncode or 0), summary, "\n".join(tail))


def report_failures(outcomes: Sequence[WorkerOutcome]) -> int:
    """Print each failed worker's exit code and last lines; the exit code of the whole command (0 when every
    worker succeeded, else the first failure's)."""
    code = 0
    for i, outcome in enumerate(outcomes):
        if outcome.code == 0:
            continue
        code = code or (outcome.code if outcome.code > 0 else 1)
        how = f"was killed by signal {-outcome.code}" if outcome.code < 0 else f"exited {outcome.code}"
        err_console.print(
            f"worker {i + 1} {how}; the other workers took over the items it held once its leases ran out"
            + (f":\n{outcome.stderr_tail}" if outcome.stderr_tail else ""),
            highlight=False,
        )
    return code
