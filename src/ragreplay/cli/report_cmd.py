"""`ragreplay report` and `ragreplay runs`: read finished and unfinished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragreplay.cli.common import console, open_store, settings_from
from ragreplay.core.runs import ResultStatus
from ragreplay.errors import ConfigError
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
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
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
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file")] = None,
) -> None:
    """List runs, newest first, with their status and versions."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.runs.list_runs(limit=limit)
        counts = {r.id: store.runs.result_counts(r.id) for r in records}
    if not records:
        console.print("no runs yet: start one with `ragreplay run --target candidate.yaml --judge SPEC`")
        return
    table = Table(title=f"runs in {settings.db}")
    table.add_column("run", no_wrap=True)  # ids are copied from here: never cut them
    for col in ("created", "status", "done/total", "errors", "target", "judge", "dataset"):
        table.add_column(col, overflow="fold")
    for r in records:
        c = counts[r.id]
        table.add_row(
            r.id,
            f"{r.created_at:%Y-%m-%d %H:%M}",
            str(r.status),
            f"{sum(n for s, n in c.items() if s != ResultStatus.PENDING)}/{r.n_cases}",
            str(c.get(ResultStatus.ERROR, 0)),
            f"{r.target_name}@{r.target_version}",
            f"{r.judge_name} ({r.judge_prompt_version})",
            r.dataset_hash,
        )
    console.print(table)


def sources(
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file")] = None,
) -> None:
    """List ingested sources."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.cases.list_sources()
    table = Table(title=f"sources in {settings.db}")
    for col in ("source", "path", "format", "ingested", "conversations", "cases", "skipped"):
        table.add_column(col)
    for s in records:
        table.add_row(
            s.id,
            s.path,
            s.format,
            f"{s.ingested_at:%Y-%m-%d %H:%M}",
            str(s.n_conversations),
            str(s.n_cases),
            str(s.n_skipped),
        )
    console.print(table)
