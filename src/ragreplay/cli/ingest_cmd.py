"""`ragreplay ingest`: read a conversation log into the store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    console,
    err_console,
    open_store,
    progress_display,
    settings_from,
)
from ragreplay.cli.ingest_preview import dry_run_tables
from ragreplay.cli.json_output import check_output_format, write_json
from ragreplay.errors import ConfigError
from ragreplay.ingest import IngestSummary, ingest_file, validate_file
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.yaml_files import load_model, read_yaml
from ragreplay.store.location import sqlite_file, store_exists

_SHOWN_APART = ("preview", "records_read", "records_ignored")


def _summary_table(summary: IngestSummary, title: str) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    for key, value in summary.model_dump(mode="json", exclude=set(_SHOWN_APART)).items():
        if isinstance(value, dict):
            for sub, n in sorted(value.items()):
                table.add_row(f"{key}: {sub}", str(n))
        else:
            table.add_row(key, str(value))
    return table


@contextmanager
def _removed_if_left_empty(db: str) -> Iterator[None]:
    """A SQLite store this ingest creates is deleted again when the ingest fails: a bad file leaves no empty
    store behind (the ingest's transaction rolled back, so the store holds nothing)."""
    created = None if store_exists(db) else sqlite_file(db)
    try:
        yield
    except BaseException:
        if created is not None:
            for leftover in (
                created,
                *(created.with_name(created.name + s) for s in ("-wal", "-shm", "-journal")),
            ):
                leftover.unlink(missing_ok=True)
        raise


def _dry_run(path: Path, fmt: str | None, mapping: FieldMapping | None, db: str) -> IngestSummary:
    """Validate and count ``path``; against the store when there is one, so ``already_ingested`` is known."""
    if not store_exists(db):
        return validate_file(path, fmt, mapping)
    with open_store(db) as store:
        return ingest_file(path, store, fmt, mapping, dry_run=True)


def _pull_langfuse(url: str, since: str | None, limit: int | None, folder: Path) -> Path:
    """Pull Langfuse's public API into ``folder``; the keys come from the environment, never from flags."""
    from ragreplay.ingest.langfuse_api import LangfusePull, langfuse_keys, pull_langfuse
    from ragreplay.shadow.judging import parse_since

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: give at least 1 trace. Fix: e.g. --limit 500, or leave it out")
    langfuse_keys(os.environ)  # missing keys are said before any progress is drawn
    pull = LangfusePull(url, since=parse_since(since) if since else None, limit=limit)
    dest = folder / "langfuse-api.jsonl"
    with progress_display("[progress.description]{task.description}") as bar:
        task = bar.add_task("pulling from Langfuse", total=None)

        def on_progress(endpoint: str, records: int) -> None:
            bar.update(task, description=f"pulling {endpoint} from Langfuse: {records}")

        summary = pull_langfuse(pull, dest, os.environ, progress=on_progress)
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items())
    capped = " (stopped at the page/record cap: narrow --since or set --limit)" if summary.capped else ""
    err_console.print(f"pulled {counts} from {url}{capped}")
    return dest


def ingest(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Conversation log: canonical JSONL, flat CSV/JSONL, OpenAI chat JSONL, or a Langfuse, LangSmith, "
            "Phoenix/OpenInference or OpenTelemetry (OTLP JSON) trace export: JSON, JSONL, Parquet, CSV, or a "
            "folder of export files (or --from-langfuse)"
        ),
    ] = None,
    db: DbOption = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="canonical | flat | openai | langfuse | langsmith | openinference | otel (default: detect)",
        ),
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(
            help="YAML field mapping: column names, feedback spellings, rating_threshold, feedback_names"
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Validate and count, show the first turns and where each value came from; write nothing",
        ),
    ] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            help="text | json: the summary as one JSON document on stdout (--format names the log's format)",
        ),
    ] = "text",
    config: ConfigOption = None,
    from_langfuse: Annotated[
        str | None,
        typer.Option(
            "--from-langfuse",
            help="Pull from this Langfuse server's public API instead of a file (keys: env LANGFUSE_PUBLIC_KEY, "
            "LANGFUSE_SECRET_KEY)",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="With --from-langfuse: records since an age (7d, 24h) or a date")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="With --from-langfuse: at most this many traces")] = None,
) -> None:
    """Ingest a conversation log. Re-ingesting the same file is a no-op; a bad file writes nothing."""
    as_json = check_output_format(output_format, "--output-format")
    if (path is None) == (from_langfuse is None):
        raise ConfigError(
            "ingest: give a log file or --from-langfuse URL, not both or neither. Fix: e.g. "
            "`ragreplay ingest logs.jsonl` or `ragreplay ingest --from-langfuse https://cloud.langfuse.com`"
        )
    if from_langfuse is None and (since is not None or limit is not None):
        raise ConfigError(
            "--since and --limit go with --from-langfuse. Fix: drop them, or add --from-langfuse"
        )
    if from_langfuse is not None:
        if fmt not in (None, "langfuse"):
            raise ConfigError(
                f"--format {fmt} with --from-langfuse: the pull is Langfuse. Fix: drop --format"
            )
        with TemporaryDirectory(prefix="ragreplay-langfuse-") as folder:
            pulled = _pull_langfuse(from_langfuse, since, limit, Path(folder))
            ingest(pulled, db, "langfuse", mapping, dry_run, output_format, config)
        return
    assert path is not None
    if fmt == "json":
        raise ConfigError(
            "--format json: --format names the log's format (canonical, flat, openai, ...; detected when left "
            "out). Fix: for the summary as JSON, write --output-format json"
        )
    field_mapping = load_model(FieldMapping, read_yaml(mapping), str(mapping)) if mapping else None
    settings = settings_from(config, db=db)
    if dry_run:
        summary = _dry_run(path, fmt, field_mapping, settings.db)
        if as_json:
            write_json(summary.model_dump(mode="json"))
            return
        seen = f" and already ingested as source {summary.source_id}" if summary.already_ingested else ""
        console.print(_summary_table(summary, f"{path} is valid{seen} (dry run: nothing written)"))
        for table in dry_run_tables(summary):
            console.print(table)
        return
    with (
        _removed_if_left_empty(settings.db),
        open_store(settings.db, create=True) as store,
        progress_display(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        ) as bar,
    ):
        task = bar.add_task(f"ingesting {path.name}", total=None)

        def on_progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        summary = ingest_file(path, store, fmt, field_mapping, progress=on_progress)
    if as_json:
        write_json(summary.model_dump(mode="json"))
        return
    if summary.already_ingested:
        console.print(f"{path} was already ingested as source {summary.source_id}: nothing to do.")
        return
    console.print(_summary_table(summary, f"ingested {path} into {store.url}"))
