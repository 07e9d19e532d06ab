"""`ragreplay compare`: champion vs one or more challengers on the same cases, judged blind in both orders;
`ragreplay comparisons` and `ragreplay compare-report` list and re-show the stored ones."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.progress import Progress, TextColumn

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    add_fitted_columns,
    check_choice,
    compact_table,
    console,
    count_progress,
    info,
    open_store,
    settings_from,
    unpriced_note,
)
from ragreplay.cli.json_output import FORMAT_HELP, check_output_format, comparison_json, write_json
from ragreplay.compare.case_comparison import CaseComparison
from ragreplay.compare.cases import questions_for, resolve_cases
from ragreplay.compare.comparison_run import load_targets, parse_challengers, run_comparison
from ragreplay.compare.grid import ComparisonSummary
from ragreplay.compare.stored import show_comparison
from ragreplay.core.comparisons import ComparisonRecord
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import default_fit_judge
from ragreplay.judges.position import OrderMode
from ragreplay.providers.registry import ModelFactory
from ragreplay.report.compare_json import FORMATS, render_comparison
from ragreplay.report.compare_text import build_comparison_renderable
from ragreplay.settings import Settings
from ragreplay.store import Store

ORDERS = ("both", "random")


def compare_progress() -> Progress:
    """The comparison's progress: count, rate, ETA, elapsed, and the answers' cost so far with a ``+ price
    unknown (...)`` note for the judges without a price and the answer calls not priced (as ``run``'s)."""
    return count_progress(TextColumn("${task.fields[cost]:.4f}{task.fields[unpriced]}"))


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
    fresh: bool,
) -> ComparisonSummary:
    champion_target, challenger_targets = load_targets(champion, challengers)
    questions = questions_for(store, cases)
    bar = compare_progress()
    judges = (judge, fit_judge)
    task = bar.add_task(
        f"comparing {len(challengers)} challenger(s)",
        total=len(cases),
        cost=0.0,
        unpriced=unpriced_note(judges, settings.prices),
        errors=0,
    )
    spent = [0.0, 0, 0]  # the answers' cost so far (this attempt), cases with a failed side, unpriced calls

    def on_plan(record: ComparisonRecord, n_done: int, reused: bool) -> None:
        if reused and n_done == len(cases):
            info(
                f"comparison {record.id} has every case already: shown from the store (--fresh starts a new one)"
            )
        elif reused:
            info(f"resuming comparison {record.id}: {n_done} of {len(cases)} cases already compared")
        bar.update(task, completed=n_done)

    def on_case(done: CaseComparison) -> None:
        if done.rows:  # the champion answered once for every challenger's row
            spent[0] += done.rows[0].champion_cost_usd + sum(row.challenger_cost_usd for row in done.rows)
            spent[2] += done.rows[0].champion_unpriced_calls + sum(
                r.challenger_unpriced_calls for r in done.rows
            )
        spent[1] += any(row.error for row in done.rows)
        note = unpriced_note(judges, settings.prices, int(spent[2]))
        bar.update(task, advance=1, cost=spent[0], unpriced=note, errors=spent[1])

    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            with bar:
                return await run_comparison(
                    store=store,
                    writer=writer,
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
                    on_plan=on_plan,
                    fresh=fresh,
                )
        finally:
            await factory.aclose()


def _print(summary: ComparisonSummary, fmt: str) -> None:
    if fmt == "text":
        console.print(build_comparison_renderable(summary))
    else:
        sys.stdout.write(render_comparison(summary, fmt))


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
    db: DbOption = None,
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    seed: Annotated[int | None, typer.Option(help="Seed for the random order mode")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cases in flight at once [default: 16]")] = None,
    config: ConfigOption = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start a new comparison instead of resuming the stored one")
    ] = False,
) -> None:
    """Answer the same cases with the champion and each challenger; report agreement (do they reach the same
    answer?) and blind judge preference (when they disagree, who wins?), with intervals, per tag, latency and
    cost. Every case is saved as it finishes: the same command again resumes (or re-shows) that comparison."""
    check_choice(fmt, FORMATS)
    if order not in ORDERS:
        raise ConfigError(f"--order {order!r}: choose both or random")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: must be at least 1")
    named = parse_challengers(challenger)
    settings = settings_from(config, db=db, concurrency=concurrency)
    with open_store(settings.db, create=True) as store:  # --cases FILE ingests it
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
                fresh,
            )
        )
    _print(summary, fmt)


def compare_report(
    comparison_id: Annotated[str, typer.Argument(help="Comparison id or a unique prefix of it")],
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Show a stored comparison again, from its saved rows: no target nor judge is called."""
    check_choice(fmt, FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        summary = show_comparison(store, comparison_id)
    _print(summary, fmt)


def comparisons(
    limit: Annotated[int, typer.Option(help="Newest N comparisons")] = 20,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List stored comparisons, newest first, with their status, sides and judges."""
    as_json = check_output_format(fmt)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.comparisons.list_comparisons(limit=limit)
        counts = store.comparisons.compared_case_counts([r.id for r in records])
    if as_json:
        write_json([comparison_json(r, counts.get(r.id, 0)) for r in records])
        return
    if not records:
        console.print(
            "no comparisons yet: start one with `ragreplay compare --champion ... --challenger ...`"
        )
        return
    # fits 80 columns: ids, dates and counts never wrap; names are cut with an ellipsis (`compare-report ID`
    # has them all)
    rows = [
        (
            r.id,
            f"{r.created_at:%m-%d %H:%M}",
            str(r.status),
            f"{counts.get(r.id, 0)}/{r.n_cases}",
            f"{r.config['champion']['name']} vs {', '.join(c['name'] for c in r.config['challengers'])}",
            f"{r.config['judge']['name']} ({r.config['judge']['prompt_version']}), order {r.config['order']}",
            r.config["cases"],
        )
        for r in records
    ]
    table = compact_table(f"comparisons in {settings.db}")
    whole = ("comparison", "created", "status", "done")
    add_fitted_columns(table, rows, whole, (("sides", 2), ("judge", 2), ("cases", 1)))
    for row in rows:
        table.add_row(*row)
    console.print(table)
