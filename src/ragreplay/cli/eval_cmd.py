"""`ragreplay eval`: score a dataset (JSONL) with retrieval, lexical and LLM-judged metrics; `ragreplay evals` and
`ragreplay eval-report` list and re-show stored eval runs.

Exit codes: 0 every row scored, 1 some rows errored (the judge failed after its retries: run the same command
again to retry them), 2 a mistake in the input or the flags (file, line, field and fix are named), 130
interrupted (saved rows are kept: the same command resumes).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    check_choice,
    console,
    count_progress,
    emit_text,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.cli.eval_workers import WorkerFlags, eval_local, eval_one_worker, with_worker
from ragreplay.cli.local_workers import check_lease, check_workers
from ragreplay.core.eval import EvalRow
from ragreplay.core.rubric import Rubric
from ragreplay.datasets.golden import eval_rows, resolve
from ragreplay.errors import ConfigError
from ragreplay.evaluation.run import EvalReport, evaluate_dataset, stored_report
from ragreplay.evaluation.shared import EvalOptions
from ragreplay.evaluation.target_rows import EvalTarget, load_eval_target
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.ingest.rubric_file import read_rubric
from ragreplay.jobs.claims import DEFAULT_LEASE_S
from ragreplay.jobs.runner import Progress
from ragreplay.metrics.llm_batch import MAX_ROWS_PER_CALL
from ragreplay.report.eval_html import EVAL_REPORT_FORMATS, render_eval_report
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.evals import EvalRunRecord


def _emit(report: EvalReport, fmt: str, output: Path | None, worker: dict[str, object] | None = None) -> None:
    text = render_eval_report(report, fmt)
    if worker is not None and fmt == "json":
        text = with_worker(text, worker)
    emit_text(text, output)
    errored = report.summary.errors
    if errored:
        err_console.print(
            f"{errored} row(s) errored: run the same command again to retry them", highlight=False
        )
        raise typer.Exit(1)


MAX_REPEATS = 20
"""``--repeats`` above this is refused: every repeat is another judge call per row."""


def _judge_options(
    judge: str | None, rubric: Path | None, repeats: int, rows_per_call: int = 1
) -> Rubric | None:
    """The rubric read and the options checked before anything is written."""
    if rubric is not None and judge is None:
        raise ConfigError("--rubric needs a judge to grade with. Fix: add --judge provider:model")
    if not 1 <= rows_per_call <= MAX_ROWS_PER_CALL:
        raise ConfigError(f"--rows-per-call {rows_per_call}: choose a number from 1 to {MAX_ROWS_PER_CALL}")
    if rows_per_call > 1 and judge is None:
        raise ConfigError("--rows-per-call groups the judge's calls. Fix: add --judge provider:model")
    if not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeats {repeats}: choose a number from 1 to {MAX_REPEATS}")
    if repeats > 1 and judge is None:
        raise ConfigError("--repeats scores the judged metrics again. Fix: add --judge provider:model")
    return read_rubric(rubric) if rubric is not None else None


GOLDEN_PREFIX = "golden:"
"""A DATASET argument naming a golden set in the store: ``golden:NAME[@version]``."""


def _dataset_rows(store: Store, dataset: str, target: EvalTarget | None) -> tuple[list[EvalRow], str]:
    """The rows to score and the dataset's name for the run: a golden set's version, or the JSONL file (whose
    ``answer`` is optional when a target answers every row)."""
    if dataset.startswith(GOLDEN_PREFIX):
        record, golden = resolve(store, dataset.removeprefix(GOLDEN_PREFIX))
        return eval_rows(golden), GOLDEN_PREFIX + record.ref
    return read_eval_dataset(Path(dataset), answer_required=target is None), dataset


async def _eval(
    store: Store,
    settings: Settings,
    dataset: str,
    judge: str | None,
    fresh: bool,
    rubric: Rubric | None = None,
    repeats: int = 1,
    target: EvalTarget | None = None,
    rows_per_call: int = 1,
) -> EvalReport:
    try:
        rows, name = _dataset_rows(store, dataset, target)
    except BaseException:
        if target is not None:
            await target.target.aclose()
        raise
    bar = count_progress()
    task = bar.add_task("evaluating", total=len(rows))

    def on_plan(record: EvalRunRecord, left: int, resumed: bool) -> None:
        if resumed and left:
            err_console.print(
                f"resuming eval run {record.id}: {record.n_rows - left} of {record.n_rows} rows done",
                highlight=False,
            )
        elif resumed:
            err_console.print(f"eval run {record.id} is done: shown again, no call made", highlight=False)
        bar.update(task, completed=record.n_rows - left)

    def on_progress(p: Progress) -> None:
        bar.update(task, completed=p.done)

    with bar:
        return await evaluate_dataset(
            store,
            settings,
            rows,
            name,
            judge,
            fresh=fresh,
            on_plan=on_plan,
            progress=on_progress,
            rubric=rubric,
            repeats=repeats,
            target=target,
            rows_per_call=rows_per_call,
        )


def eval_command(
    dataset: Annotated[
        str,
        typer.Argument(
            help="Dataset JSONL (id, question, answer, reference, contexts, ...) or golden:NAME[@version]"
        ),
    ],
    target: Annotated[
        Path | None,
        typer.Option(
            help="Target YAML: it answers every row's question (its answer and contexts are scored)"
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="LLM judge, provider:model (fake:default works offline); without: no LLM metrics"),
    ] = None,
    rubric: Annotated[
        Path | None,
        typer.Option(help="Rubric YAML: the judge also grades every criterion 1-5 (needs --judge)"),
    ] = None,
    repeats: Annotated[
        int, typer.Option(help="Score every row N times with the judge and report the run-to-run variance")
    ] = 1,
    rows_per_call: Annotated[
        int,
        typer.Option(
            help="Rows checked in one judge call (1-16): fewer requests and words per row, but a row shares "
            "the judge's attention with the others of its call"
        ),
    ] = 1,
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report to this file")] = None,
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Rows scored at once [default: 16]")] = None,
    cache: Annotated[str | None, typer.Option(help="Model cache: read-write | read-only | off")] = None,
    fresh: Annotated[
        bool,
        typer.Option("--fresh", help="Start a new eval run even if one of the same rows and judge exists"),
    ] = False,
    config: ConfigOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Score as N worker processes that claim rows from the store (each row scored once, the "
            "providers' rate limits shared); on several machines, run it on each with the same dataset file "
            "against one PostgreSQL store (or --workers 1 --eval-id ID). --concurrency then applies to each"
        ),
    ] = None,
    lease: Annotated[
        float,
        typer.Option(
            help="With --workers: seconds a worker's claim lasts unrenewed (a dead worker's rows go to the "
            "others after this)"
        ),
    ] = DEFAULT_LEASE_S,
    eval_id: Annotated[
        str | None,
        typer.Option(
            "--eval-id",
            help="With --workers: join this eval run (its full id); the dataset and options must be its own",
        ),
    ] = None,
) -> None:
    """Score a dataset: retrieval metrics (rows with judgments), lexical metrics (rows with a reference) and
    LLM-judged claim-level faithfulness, correctness, answer and context relevance (one judge call per row);
    with --rubric, every criterion of the rubric graded 1-5 (one more call per row); with --repeats N, all of it
    N times, and the run-to-run variance; with --rows-per-call N, the claims checks of up to N rows share a call.

    With --target, the target answers every row first (DATASET may then be a golden set, golden:NAME[@version]);
    the report adds latency per stage, tokens and cost per case.

    Each row is saved as it is scored: the same command resumes a killed run without repeating a call, and shows
    a finished one again without a call. Exit 0 all rows scored, 1 some errored, 2 an input mistake.

    With --workers N, N processes share the run through the store, each claiming rows not scored yet; more
    machines join with the same command (same dataset file) against one PostgreSQL store.
    """
    check_choice(fmt, EVAL_REPORT_FORMATS)
    check_workers(workers)
    check_lease(lease)
    if eval_id is not None and (workers is None or fresh):
        raise ConfigError(
            f"--eval-id {eval_id}: joins an eval run as a worker. Fix: add --workers 1 (or N), without --fresh"
        )
    graded_by = _judge_options(judge, rubric, repeats, rows_per_call)
    golden = dataset.startswith(GOLDEN_PREFIX)
    if golden and target is None:
        raise ConfigError(
            f"{dataset}: a golden set's rows have no answers to score. Fix: add --target TARGET.yaml to have "
            "a target answer every question"
        )
    settings = settings_from(config, db=db, concurrency=concurrency, cache=cache)
    answering = load_eval_target(target) if target is not None else None
    if workers is not None:
        flags = WorkerFlags(judge, target, rubric, repeats, rows_per_call, config)
        options = EvalOptions(judge, graded_by, repeats, answering, rows_per_call)
        _eval_workers(settings, dataset, options, flags, fresh, workers, lease, eval_id, fmt, output, golden)
        return
    with open_store(settings.db, create=not golden) as store:
        try:
            report = asyncio.run(
                _eval(store, settings, dataset, judge, fresh, graded_by, repeats, answering, rows_per_call)
            )
        except KeyboardInterrupt:
            err_console.print(
                "\n[yellow]interrupted.[/yellow] Scored rows are saved; run the same command again to resume."
            )
            raise typer.Exit(130) from None
    _emit(report, fmt, output)


def _eval_workers(
    settings: Settings,
    dataset: str,
    options: EvalOptions,
    flags: WorkerFlags,
    fresh: bool,
    workers: int,
    lease: float,
    eval_id: str | None,
    fmt: str,
    output: Path | None,
    golden: bool,
) -> None:
    """``eval --workers``: this process as one worker (1), or N worker processes started here."""
    worker: dict[str, object] | None = None
    with open_store(settings.db, create=not golden) as store:
        try:
            try:
                rows, name = _dataset_rows(store, dataset, options.target)
            except BaseException:
                if options.target is not None:
                    asyncio.run(options.target.target.aclose())
                raise
            if workers == 1:
                report, worker = eval_one_worker(store, settings, rows, name, options, fresh, eval_id, lease)
                failed = 0
            else:
                if options.target is not None:  # the workers load it again: here it only names the run
                    asyncio.run(options.target.target.aclose())
                found, failed = eval_local(store, settings, rows, name, options, flags, fresh, workers, lease)
                if found is None:
                    err_console.print(
                        "the eval run is not finished: run the same command again to resume it",
                        highlight=False,
                    )
                    raise typer.Exit(failed or 1)
                report = found
        except KeyboardInterrupt:
            err_console.print(
                "\n[yellow]interrupted.[/yellow] Scored rows are saved; run the same command again to resume."
            )
            raise typer.Exit(130) from None
    _emit(report, fmt, output, worker)
    if failed:
        raise typer.Exit(failed)


def eval_report(
    eval_id: Annotated[str, typer.Argument(help="Eval run id or a unique prefix of it")],
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report to this file")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Show a stored eval run again from its saved rows: no model is called."""
    check_choice(fmt, EVAL_REPORT_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        record = store.evals.get_eval(eval_id)
        if record is None:
            raise ConfigError(
                f"no eval run {eval_id!r} in {store.url}. Fix: pick an id from `ragreplay evals`"
            )
        report = stored_report(store, record)
    _emit(report, fmt, output)


def evals(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="Show at most N runs")] = 20,
    config: ConfigOption = None,
) -> None:
    """List eval runs, newest first: dataset, judge, rows and status."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.evals.list_evals(limit)
    if not records:
        console.print("no eval runs yet: run `ragreplay eval DATASET --judge provider:model`")
        return
    for r in records:
        console.print(
            f"{r.id}  {r.status.value:<11}  {r.created_at:%Y-%m-%d %H:%M}  {r.n_rows} rows  "
            f"judge {r.judge or '-'}  {r.dataset}",
            highlight=False,
            soft_wrap=True,
        )
