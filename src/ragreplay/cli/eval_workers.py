"""`ragreplay eval --workers N`: the eval run scored by worker processes that claim its rows from the store
(:mod:`ragreplay.evaluation.shared`), on this machine (N processes) or several (each running ``--workers``, or
``--workers 1 --eval-id ID``, with the same dataset file, against one PostgreSQL store)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragreplay.cli.common import count_progress, info
from ragreplay.cli.local_workers import report_failures, run_local_workers
from ragreplay.core.eval import EvalRow
from ragreplay.core.runs import RunStatus
from ragreplay.evaluation.run import EvalReport, stored_report
from ragreplay.evaluation.shared import EvalOptions, SharedEval, evaluate_worker, join_shared_eval
from ragreplay.jobs.claims import worker_id
from ragreplay.jobs.runner import Progress
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.claim_queues import eval_queue
from ragreplay.store.evals import EvalRunRecord


@dataclasses.dataclass(frozen=True)
class WorkerFlags:
    """The eval's own flags a worker process is started with (beside the dataset and the store)."""

    judge: str | None
    target: Path | None
    rubric: Path | None
    repeats: int
    rows_per_call: int
    config: Path | None


def eval_one_worker(
    store: Store,
    settings: Settings,
    rows: Sequence[EvalRow],
    dataset: str,
    options: EvalOptions,
    fresh: bool,
    eval_id: str | None,
    lease: float,
) -> tuple[EvalReport, dict[str, Any]]:
    """This process as one worker of the eval run (``--workers 1``), with a progress bar of its own rows; the
    run's report as the store has it at the end, and what this worker did (for the JSON report's ``worker``)."""
    bar = count_progress()
    task = bar.add_task("evaluating (worker)", total=None)

    def on_plan(record: EvalRunRecord, existed: bool) -> None:
        info(f"{'joined' if existed else 'started'} eval run [bold]{record.id}[/bold] as a worker")
        if record.status != RunStatus.DONE:
            bar.start()

    def on_progress(p: Progress) -> None:
        bar.update(task, total=p.total, completed=p.done)

    shared = SharedEval(store.work_claims, worker_id(), lease)
    try:
        record, outcome = asyncio.run(
            evaluate_worker(
                store,
                settings,
                rows,
                dataset,
                options,
                shared,
                fresh,
                eval_id,
                os.environ,
                on_plan,
                on_progress,
            )
        )
    finally:
        bar.stop()
    finished = record if outcome is None else outcome.record
    report = dataclasses.replace(stored_report(store, finished), reshown=outcome is None)
    scored = 0 if outcome is None else outcome.progress.done
    errors = 0 if outcome is None else outcome.progress.errors
    marked = outcome is not None and outcome.marked_done
    return report, {"eval_id": record.id, "scored": scored, "errors": errors, "marked_done": marked}


def eval_local(
    store: Store,
    settings: Settings,
    rows: Sequence[EvalRow],
    dataset: str,
    options: EvalOptions,
    flags: WorkerFlags,
    fresh: bool,
    workers: int,
    lease: float,
) -> tuple[EvalReport | None, int]:
    """``--workers N`` on this machine: the run found or created here (under the lock), then N worker
    processes joining it by id; the run's report (``None`` when no worker finished it) and the exit code of the
    first worker that failed (0: none)."""
    record, existed = join_shared_eval(store, rows, dataset, options, fresh)
    if record.status == RunStatus.DONE:
        info(f"eval run [bold]{record.id}[/bold] is done: shown again, no call made")
        return stored_report(store, record), 0
    info(f"{'resuming' if existed else 'started'} eval run [bold]{record.id}[/bold] with {workers} workers")
    argv = ["eval", dataset, "--eval-id", record.id, "--workers", "1", "--lease", str(lease)]
    argv += ["--db", settings.db, "--concurrency", str(settings.concurrency), "--cache", settings.cache]
    argv += ["--repeats", str(flags.repeats), "--rows-per-call", str(flags.rows_per_call), "--format", "json"]
    argv += [] if flags.judge is None else ["--judge", flags.judge]
    argv += [] if flags.target is None else ["--target", str(flags.target)]
    argv += [] if flags.rubric is None else ["--rubric", str(flags.rubric)]
    argv += [] if flags.config is None else ["--config", str(flags.config)]
    queue = eval_queue(record.id)

    def left() -> int:
        return max(0, store.evals.unscored(record.id) - store.work_claims.parked(queue))

    outcomes = run_local_workers(argv, workers, "evaluating", len(rows), left)
    failed = report_failures(outcomes)
    finished = store.evals.get_eval(record.id)
    if finished is None or finished.status != RunStatus.DONE:
        return None, failed or 1
    marked = sum(1 for o in outcomes if (o.summary or {}).get("worker", {}).get("marked_done"))
    info(f"eval run [bold]{record.id}[/bold] finished by {workers} workers ({marked} marked it done)")
    return dataclasses.replace(stored_report(store, finished), reshown=False), failed


def with_worker(text: str, worker: dict[str, Any]) -> str:
    """A JSON report with what this worker did added under ``worker``."""
    data = json.loads(text)
    data["worker"] = worker
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
