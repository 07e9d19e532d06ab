"""`ragreplay eval-diff RUN_A RUN_B`: is eval run B better than A? Rows paired by dataset id; per metric the
difference with a paired bootstrap interval, a permutation p-value and effect sizes. No model is called.

Exit codes: 0 shown, 2 a mistake (an unknown or ambiguous run id, runs sharing no row, a bad flag).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import ConfigOption, DbOption, check_choice, emit_text, open_store, settings_from
from ragreplay.evaluation.diff import diff_runs
from ragreplay.report.eval_diff import DIFF_FORMATS, render_diff


def eval_diff(
    run_a: Annotated[str, typer.Argument(help="Eval run A (the baseline): an id or a unique prefix")],
    run_b: Annotated[str, typer.Argument(help="Eval run B (the candidate): an id or a unique prefix")],
    fmt: Annotated[str, typer.Option("--format", help="text | md | json")] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report to this file")] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the bootstrap and of a Monte Carlo permutation test")
    ] = 0,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Compare two stored eval runs row by row: for every metric both scored, the rows paired, mean A and B,
    B - A with a 95% paired bootstrap interval, a permutation p-value (and Holm's over the metrics) and effect
    sizes (Cohen's d_z, rank-biserial); rows on one side only are counted. No model is called.
    """
    check_choice(fmt, DIFF_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        diff = diff_runs(store, run_a, run_b, seed=seed)
    emit_text(render_diff(diff, fmt), output, "eval-diff")
