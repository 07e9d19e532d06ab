"""`ragreplay export`: a run's cases and results as a CSV or Parquet file, one row a case."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import ConfigOption, DbOption, check_choice, info, open_store, settings_from
from ragreplay.errors import ConfigError
from ragreplay.replay.result_table import RESULT_TABLE, find_run, result_rows
from ragreplay.report.table_export import EXPORT_FORMATS, write_table


def export(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of it")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to write (replaced whole)")],
    fmt: Annotated[
        str, typer.Option("--format", help="csv (standard library) | parquet (needs ragreplay[parquet])")
    ] = "csv",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Export a run's cases and results, one row a case: the case (question, old answer, feedback, tags), the
    replay (question replayed, new answer, chunks, latency, tokens, cost) and the judgment and verdict."""
    check_choice(fmt, EXPORT_FORMATS)
    if output.is_dir():
        raise ConfigError(
            f"--output {output} is a folder. Fix: give a file name, e.g. {output / f'run.{fmt}'}"
        )
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        run = find_run(store, run_id)
        n = write_table(RESULT_TABLE, result_rows(store, run), fmt, output)
    info(f"exported {n} case(s) of run {run.id} to {output}")
