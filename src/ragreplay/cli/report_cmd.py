"""`ragreplay report` and `ragreplay runs`: read finished and unfinished runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import (
    add_fitted_columns,
    check_choice,
    compact_table,
    console,
    open_store,
    settings_from,
)
from ragreplay.cli.json_output import FORMAT_HELP, check_output_format, run_json, source_json, write_json
from ragreplay.core.runs import ResultStatus, RunStatus
from ragreplay.replay.replay_run import summarize_run
from ragreplay.report import FORMATS, render
from ragreplay.report.terminal import build_renderable
from ragreplay.review.failure_tags import with_run_failure_tags


def report(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it")],
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout")
    ] = None,
    examples: Annotated[int, typer.Option(help="Example rows per list")] = 10,
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file")] = None,
) -> None:
    """Show a run's verdict matrix, rates with intervals, per-tag rows, the failure tags reviewers gave its
    cases and the cases to review."""
    check_choice(fmt, FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        summary = with_run_failure_tags(store, summarize_run(store, run_id))
    if output is not None:
        output.write_text(render(summary, fmt, examples), encoding="utf-8")
        console.print(f"report written to {output}")
    elif fmt == "text":
        console.print(build_renderable(summary, examples))
    else:
        typer.echo(render(summary, fmt, examples))


def runs(
    limit: Annotated[int, typer.Option(help="Newest N runs")] = 20,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file")] = None,
) -> None:
    """List runs, newest first, with their status and versions."""
    as_json = check_output_format(fmt)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.runs.list_runs(limit=limit)
        counts = {r.id: store.runs.result_counts(r.id) for r in records}
        active = store.runs.last_activity([r.id for r in records])
    now = datetime.now(UTC)
    statuses = {r.id: shown_status(r.status, active.get(r.id, r.created_at), now) for r in records}
    if as_json:
        write_json([run_json(r, counts[r.id], statuses[r.id]) for r in records])
        return
    if not records:
        console.print("no runs yet: start one with `ragreplay run --target candidate.yaml --judge SPEC`")
        return
    # fits 80 columns: ids, dates and counts never wrap; names are cut with an ellipsis (`report ID` has all)
    rows = [
        (
            r.id,
            f"{r.created_at:%m-%d %H:%M}",
            statuses[r.id],
            f"{sum(n for s, n in counts[r.id].items() if s != ResultStatus.PENDING)}/{r.n_cases}",
            str(counts[r.id].get(ResultStatus.ERROR, 0)),
            r.target_name,
            r.judge_name,
        )
        for r in records
    ]
    table = compact_table(f"runs in {settings.db}")
    # ids are copied from here: never cut them, nor the dates and counts; the names share what is left of the
    # terminal, cut with an ellipsis (`ragreplay report ID` has them whole)
    add_fitted_columns(
        table, rows, ("run", "created", "status", "done", "err"), (("target", 3), ("judge", 2))
    )
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if STALE in statuses.values():
        console.print(
            f"{STALE}: marked running, but no case saved for over {STALE_AFTER_MIN} minutes: its process was "
            "most likely stopped. The same `ragreplay run` command resumes it.",
            highlight=False,
        )


STALE = "stale"
STALE_AFTER_MIN = 10
"""A ``running`` run that saved nothing for this long is shown as stale (its process is most likely gone)."""


def shown_status(status: RunStatus, last_activity: datetime, now: datetime) -> str:
    """The status the run list shows: ``stale`` for a ``running`` run with no heartbeat for
    :data:`STALE_AFTER_MIN` minutes (a kill leaves the status as it was), else the stored status."""
    if status == RunStatus.RUNNING and now - last_activity > timedelta(minutes=STALE_AFTER_MIN):
        return STALE
    return str(status)


def sources(
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file")] = None,
) -> None:
    """List ingested sources."""
    as_json = check_output_format(fmt)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.cases.list_sources()
    if as_json:
        write_json([source_json(s) for s in records])
        return
    rows = [
        (
            s.id,
            s.path,
            s.format,
            f"{s.ingested_at:%m-%d %H:%M}",
            str(s.n_conversations),
            str(s.n_cases),
            str(s.n_skipped),
        )
        for s in records
    ]
    table = compact_table(f"sources in {settings.db}")
    for i, col in enumerate(("source", "path", "format", "ingested", "convs", "cases", "skipped")):
        if col == "path":  # folded, never cut: paths are copied whole
            table.add_column(col, overflow="fold", min_width=10, ratio=1)
        else:
            table.add_column(col, no_wrap=True, min_width=max([len(col), *(len(row[i]) for row in rows)]))
    for row in rows:
        table.add_row(*row)
    console.print(table)
