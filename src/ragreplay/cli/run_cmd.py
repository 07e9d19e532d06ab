"""`ragreplay run`: rewrite, replay and judge every labelled case through a candidate target."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    console,
    err_console,
    info,
    log,
    open_store,
    parse_tags,
    progress_display,
    settings_from,
)
from ragreplay.cli.common import (
    unpriced_note as common_unpriced_note,
)
from ragreplay.cli.json_output import FORMAT_HELP, check_output_format, write_json
from ragreplay.cli.local_workers import check_lease, check_workers
from ragreplay.cli.run_workers import run_local, run_one_worker, run_summary
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.jobs import runner
from ragreplay.jobs.claims import DEFAULT_LEASE_S
from ragreplay.ports import Target
from ragreplay.replay.replay_run import case_selection, replay, summarize_run
from ragreplay.report.terminal import build_renderable
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.loader import load_target

EXAMPLES = 5
"""Cases of each kind (for review, regressions, errors, unscorable) the end-of-run summary shows."""


def progress_bar() -> Progress:
    """A progress bar on stderr with counts, rate, ETA, cost so far and errors, left on screen at the end;
    plain lines when stderr is not a terminal, nothing under --quiet (:func:`progress_display`)."""
    return progress_display(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(bar_width=16),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}/s"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("${task.fields[cost]:.4f}{task.fields[unpriced]}"),
        TextColumn("[red]{task.fields[errors]} err[/red] [magenta]{task.fields[unscorable]} unsc.[/magenta]"),
        transient=False,
    )


def progress_updater(
    bar: Progress, task: TaskID, every_s: float = 0.1, clock: Callable[[], float] = time.monotonic
) -> runner.ProgressCallback:
    """The runner's progress callback for ``bar``: called after every case, it redraws at most every
    ``every_s`` (rich's rate is computed over its samples on each update) and always for the last case."""
    shown = [float("-inf")]

    def on_progress(p: runner.Progress) -> None:
        now = clock()
        if now - shown[0] < every_s and p.done < p.total:
            return
        shown[0] = now
        speed = bar.tasks[task].speed
        bar.update(
            task,
            completed=p.done,
            rate=f"{speed:.1f}" if speed else "–",
            cost=p.cost_usd,
            errors=p.errors,
            unscorable=p.unscorable,
        )

    return on_progress


def unpriced_note(settings: Settings) -> str:
    """`` + price unknown (spec, ...)`` for the run's model specs that have no price (their calls are not in
    the cost shown), else an empty string."""
    return common_unpriced_note((settings.judge, settings.rewriter_spec), settings.prices)


async def run_replay(
    store: Store,
    settings: Settings,
    target: Target,
    cases: Collection[Case],
    selection: dict[str, object],
    fresh: bool,
    on_counts: runner.ProgressCallback | None = None,
    notes_on_stderr: bool = False,
) -> RunRecord:
    """Plan (or resume) a run and execute it with a live progress bar (shown once the run is planned);
    ``on_counts`` also hears the runner's counts; ``notes_on_stderr`` keeps stdout for a JSON summary."""
    notes = err_console if notes_on_stderr else console
    bar = progress_bar()
    task = bar.add_task(
        "replay",
        total=len(cases),
        rate="–",
        cost=0.0,
        unpriced=unpriced_note(settings),
        errors=0,
        unscorable=0,
    )

    def on_plan(run: RunRecord, resumed: bool) -> None:
        if run.status == RunStatus.DONE:
            info(
                f"run [bold]{run.id}[/bold] already finished with the same target, judge and cases: shown from "
                "the store, no call made (--fresh replays anew)",
                to=notes,
            )
            return
        if resumed:
            info(f"resuming unfinished run [bold]{run.id}[/bold] (same target, judge and cases)", to=notes)
        else:
            info(f"started run [bold]{run.id}[/bold]: {len(cases)} cases through {target.name}", to=notes)
        log.debug("run %s: concurrency %d, judge %s", run.id, settings.concurrency, settings.judge)
        bar.start()

    updater = progress_updater(bar, task)

    def on_progress(p: runner.Progress) -> None:
        updater(p)
        if on_counts is not None:
            on_counts(p)

    try:
        return await replay(
            store, settings, target, cases, selection, os.environ, fresh, on_progress, on_plan
        )
    finally:
        bar.stop()


def run(
    target: Annotated[Path, typer.Option(help="Candidate target YAML (the RAG configuration under test)")],
    judge: Annotated[
        str | None, typer.Option(help="FIT judge, provider:model (e.g. openai:gpt-4.1-mini)")
    ] = None,
    rewriter: Annotated[
        str | None, typer.Option(help="Follow-up rewriter, provider:model [default: judge]")
    ] = None,
    db: DbOption = None,
    source: Annotated[
        list[str] | None, typer.Option(help="Only cases from this ingested source (repeatable)")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only cases with tag KEY=VALUE (repeatable)")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N cases")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cases replayed at once [default: 16]")] = None,
    cache: Annotated[str | None, typer.Option(help="Model cache: read-write | read-only | off")] = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Start a new run even if one of the same target, judge and cases exists"
        ),
    ] = False,
    config: ConfigOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Replay as N worker processes that claim cases from the store (each case replayed once, the "
            "providers' rate limits shared); on several machines, run it on each against one PostgreSQL store "
            "(or --workers 1 --run-id ID). --concurrency then applies to each worker"
        ),
    ] = None,
    lease: Annotated[
        float,
        typer.Option(
            help="With --workers: seconds a worker's claim lasts unrenewed (a dead worker's cases go to the "
            "others after this)"
        ),
    ] = DEFAULT_LEASE_S,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help="With --workers: join this run (its full id) instead of finding it by target and cases",
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
) -> None:
    """Replay labelled cases through a candidate and judge each new answer against the old one.

    Interrupted runs (Ctrl-C, a kill) resume when the same command runs again: finished cases are kept and no
    model call is paid twice. The same command on a finished run shows it again without a call (--fresh
    replays anew).
    """
    as_json = check_output_format(fmt)
    check_workers(workers)
    check_lease(lease)
    if run_id is not None and (workers is None or fresh):
        raise ConfigError(
            f"--run-id {run_id}: joins a run as a worker. Fix: add --workers 1 (or N), without --fresh"
        )
    settings = settings_from(
        config, db=db, judge=judge, rewriter=rewriter, concurrency=concurrency, cache=cache
    )
    loaded_target = load_target(target)
    tags = parse_tags(tag)
    marked: bool | None = None
    counts: runner.Progress | None = None
    failed = 0
    with open_store(settings.db, create=True) as store:
        selection: dict[str, object] = {"source_ids": source or None, "tags": tags or None, "limit": limit}
        cases: Collection[Case] = [] if run_id is not None else case_selection(store, source, tags, limit)
        try:
            if workers is None:
                last: dict[str, runner.Progress] = {}
                replayed_id = asyncio.run(
                    run_replay(
                        store,
                        settings,
                        loaded_target,
                        cases,
                        selection,
                        fresh,
                        lambda p: last.update(p=p),
                        notes_on_stderr=as_json,
                    )
                ).id
                counts = last.get("p")
            elif workers == 1:
                replayed_id, counts, done_here = run_one_worker(
                    store, settings, loaded_target, cases, selection, fresh, run_id, lease
                )
                marked = done_here
            else:
                replayed_id, counts, failed = run_local(
                    store, settings, target, loaded_target, cases, selection, fresh, workers, lease, config
                )
        except KeyboardInterrupt:
            err_console.print(
                "\n[yellow]interrupted.[/yellow] Finished cases are saved; run the same command again to resume."
            )
            raise typer.Exit(130) from None
        if as_json:
            write_json(run_summary(store, replayed_id, counts, marked))
        else:
            summary = summarize_run(store, replayed_id, keep=EXAMPLES)  # the rows shown, not all
    if not as_json:
        console.print(build_renderable(summary, examples=EXAMPLES))
        info(f"\nfull report: ragreplay report {replayed_id} --format md", to=console)
    if failed:
        raise typer.Exit(failed)
