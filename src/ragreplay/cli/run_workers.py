"""`ragreplay run --workers N`: the run replayed by worker processes that claim its cases from the store
(:mod:`ragreplay.replay.shared`), on this machine (N processes) or several (each running ``--workers``, or
``--workers 1 --run-id ID``, against one PostgreSQL store)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ragreplay.cli.common import count_progress, info, log
from ragreplay.cli.local_workers import report_failures, run_local_workers
from ragreplay.core.runs import ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Case
from ragreplay.jobs.claims import worker_id
from ragreplay.jobs.runner import Progress
from ragreplay.ports import Target
from ragreplay.replay.replay_run import plan_shared_run, replay_worker
from ragreplay.replay.shared import SharedReplay
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.claim_queues import run_queue


def run_summary(
    store: Store, run_id: str, counts: Progress | None, marked_done: bool | None
) -> dict[str, Any]:
    """The JSON summary of ``run``: the run as the store has it now, and what this command replayed."""
    run = store.runs.get_run(run_id)
    stored = store.runs.result_counts(run_id)
    summary: dict[str, Any] = {
        "run_id": run_id,
        "status": None if run is None else str(run.status),
        "cases": None if run is None else run.n_cases,
        "done": stored.get(ResultStatus.DONE, 0),
        "errors": stored.get(ResultStatus.ERROR, 0),
        "pending": stored.get(ResultStatus.PENDING, 0),
        "replayed": 0 if counts is None else counts.done,
        "replay_errors": 0 if counts is None else counts.errors,
        "unscorable": 0 if counts is None else counts.unscorable,
        "cost_usd": 0.0 if counts is None else counts.cost_usd,
        "unpriced_calls": 0 if counts is None else counts.unpriced_calls,
    }
    if marked_done is not None:
        summary["marked_done"] = marked_done
    return summary


def run_one_worker(
    store: Store,
    settings: Settings,
    target: Target,
    cases: Collection[Case],
    selection: dict[str, object],
    fresh: bool,
    run_id: str | None,
    lease: float,
) -> tuple[str, Progress | None, bool]:
    """This process as one worker of the run (``--workers 1``), with a progress bar of its own cases; the run's
    id, this worker's counts (``None``: the run was finished already) and whether it marked the run done."""
    bar = count_progress()
    task = bar.add_task("replay (worker)", total=None)

    def on_plan(run: RunRecord, resumed: bool) -> None:
        how = "joined" if resumed else "started"
        info(f"{how} run [bold]{run.id}[/bold] as a worker (status {run.status})")
        if run.status != RunStatus.DONE:
            bar.start()

    def on_progress(p: Progress) -> None:
        bar.update(task, total=p.total, completed=p.done)

    shared = SharedReplay(store.work_claims, worker_id(), lease)
    log.debug("worker %s, lease %.1f s", shared.worker, lease)
    try:
        run, outcome = asyncio.run(
            replay_worker(
                store,
                settings,
                target,
                cases,
                selection,
                os.environ,
                shared,
                fresh,
                run_id,
                on_progress,
                on_plan,
            )
        )
    finally:
        bar.stop()
    if outcome is None:
        return run.id, None, False
    return run.id, outcome.progress, outcome.marked_done


def run_local(
    store: Store,
    settings: Settings,
    target_path: Path,
    target: Target,
    cases: Collection[Case],
    selection: dict[str, object],
    fresh: bool,
    workers: int,
    lease: float,
    config: Path | None,
) -> tuple[str, Progress, int]:
    """``--workers N`` on this machine: the run found or created here (under the lock), then N worker
    processes joining it by id; their counts added up and the exit code of the first that failed (0: none)."""
    run, resumed = asyncio.run(plan_shared_run(store, settings, target, cases, selection, os.environ, fresh))
    total = run.n_cases
    if run.status == RunStatus.DONE:
        info(
            f"run [bold]{run.id}[/bold] already finished: shown from the store, no call made (--fresh replays anew)"
        )
        return run.id, Progress(total=total), 0
    info(f"{'resuming' if resumed else 'started'} run [bold]{run.id}[/bold] with {workers} workers")
    argv = ["run", "--target", str(target_path), "--db", settings.db, "--run-id", run.id, "--workers", "1"]
    argv += ["--lease", str(lease), "--concurrency", str(settings.concurrency), "--format", "json"]
    argv += ["--judge", str(settings.judge), "--cache", settings.cache]
    argv += [] if settings.rewriter_spec is None else ["--rewriter", settings.rewriter_spec]
    argv += [] if config is None else ["--config", str(config)]
    queue = run_queue(run.id)

    def left() -> int:
        counts = store.runs.result_counts(run.id)
        not_done = sum(n for status, n in counts.items() if status != ResultStatus.DONE)
        return max(0, not_done - store.work_claims.parked(queue))

    outcomes = run_local_workers(argv, workers, "replay", total, left)
    counts = Progress(total=total)
    for outcome in outcomes:
        summary = outcome.summary or {}
        counts.done += int(summary.get("replayed", 0))
        counts.errors += int(summary.get("replay_errors", 0))
        counts.unscorable += int(summary.get("unscorable", 0))
        counts.cost_usd += float(summary.get("cost_usd", 0.0))
        counts.unpriced_calls += int(summary.get("unpriced_calls", 0))
    return run.id, counts, report_failures(outcomes)
