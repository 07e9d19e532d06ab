"""`ragreplay ingest`: read a conversation log into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from ragreplay.cli.common import ConfigOption, DbOption, console, open_store, progress_display, settings_from
from ragreplay.cli.json_output import check_output_format, write_json
from ragreplay.errors import ConfigError
from ragreplay.ingest import IngestSummary, ingest_file, validate_file
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.yaml_files import load_model, read_yaml
from ragreplay.store.location import store_exists


def _summary_table(summary: IngestSummary, title: str) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count", justify="right")
    for key, value in summary.model_dump(mode="json").items():
        if isinstance(value, dict):
            for sub, n in sorted(value.items()):
                table.add_row(f"{key}: {sub}", str(n))
        else:
            table.add_row(key, str(value))
    return table


def _dry_run(path: Path, fmt: str | None, mapping: FieldMapping | None, db: str) -> IngestSummary:
    """Validate and count ``path``; against the store when there is one, so ``already_ingested`` is known."""
    if not store_exists(db):
        return validate_file(path, fmt, mapping)
    with open_store(db) as store:
        return ingest_file(path, store, fmt, mapping, dry_run=True)


def ingest(
    path: Annotated[
        Path,
        typer.Argument(
            help="Conversation log: canonical JSONL, flat CSV/JSONL, OpenAI chat JSONL, or a Langfuse, LangSmith, "
            "Phoenix/OpenInference or OpenTelemetry (OTLP JSON) trace export"
        ),
    ],
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
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and count; write nothing")] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            help="text | json: the summary as one JSON document on stdout (--format names the log's format)",
        ),
    ] = "text",
    config: ConfigOption = None,
) -> None:
    """Ingest a conversation log. Re-ingesting the same file is a no-op; a bad file writes nothing."""
    as_json = check_output_format(output_format, "--output-format")
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
        return
    with (
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
