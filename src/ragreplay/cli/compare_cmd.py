"""`ragreplay compare`: champion vs one or more challengers on the same cases, judged blind in both orders."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragreplay.cli.common import console, err_console, open_store, settings_from
from ragreplay.compare.cases import questions_for, resolve_cases
from ragreplay.compare.service import default_fit_judge, load_targets, parse_challengers, run_comparison
from ragreplay.compare.summary import ComparisonSummary
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.judges.position import OrderMode
from ragreplay.providers.registry import ModelFactory
from ragreplay.report.compare_json import FORMATS, render_comparison
from ragreplay.report.compare_text import build_comparison_renderable
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.writer import StoreWriter

ORDERS = ("both", "random")


async def _run(
    store: Store,
    settings: Settings,
    champion: Path,
    challengers: dict[str, Path],
    cases: list[Case],
    cases_label: str,
    judge: str,
    fit_judge: str,
    order: OrderMode,
    seed: int | None,
) -> ComparisonSummary:
    champion_target, challenger_targets = load_targets(champion, challengers)
    questions = questions_for(store, cases)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = bar.add_task(f"comparing {len(challengers)} challenger(s)", total=len(cases))

    def on_case(*_: object) -> None:
        bar.advance(task)

    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            with bar:
                return await run_comparison(
                    factory=factory,
                    champion=champion_target,
                    challengers=challenger_targets,
                    judge_spec=judge,
                    fit_judge_spec=fit_judge,
                    cases=cases,
                    questions=questions,
                    cases_label=cases_label,
                    order=order,
                    seed=seed,
                    concurrency=settings.concurrency,
                    on_case=on_case,
                )
        finally:
            await factory.aclose()


def compare(
    champion: Annotated[Path, typer.Option(help="Target YAML of the production configuration")],
    challenger: Annotated[list[str], typer.Option(help="NAME=PATH of a candidate target YAML (repeatable)")],
    cases: Annotated[
        str, typer.Option(help="Ingested source id, run id (its cases) or a log file to ingest")
    ],
    judge: Annotated[str, typer.Option(help="Pairwise judge: local, or provider:model")],
    fit_judge: Annotated[
        str | None, typer.Option(help="Agreement (FIT) judge [default: matches --judge]")
    ] = None,
    order: Annotated[str, typer.Option(help="both (judge each pair in both orders) | random")] = "both",
    limit: Annotated[int | None, typer.Option(help="Only the first N cases")] = None,
    db: Annotated[str | None, typer.Option(help="Store URL or SQLite path [default: ragreplay.db]")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | md | json")] = "text",
    seed: Annotated[int | None, typer.Option(help="Seed for the random order mode")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cases in flight at once [default: 16]")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file [default: ./ragreplay.yaml]")] = None,
) -> None:
    """Answer the same cases with the champion and each challenger; report agreement (do they reach the same
    answer?) and blind judge preference (when they disagree, who wins?), with intervals, per tag, latency and
    cost."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if order not in ORDERS:
        raise ConfigError(f"--order {order!r}: choose both or random")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: must be at least 1")
    named = parse_challengers(challenger)
    settings = settings_from(config, db=db, concurrency=concurrency)
    with open_store(settings.db) as store:
        selected, label = resolve_cases(store, cases, limit)
        summary = asyncio.run(
            _run(
                store,
                settings,
                champion,
                named,
                selected,
                label,
                judge,
                fit_judge or default_fit_judge(judge),
                cast(OrderMode, order),
                seed,
            )
        )
    if fmt == "text":
        console.print(build_comparison_renderable(summary))
    else:
        sys.stdout.write(render_comparison(summary, fmt))
