"""`ragreplay shadow judge` and `ragreplay shadow report`: judge the new shadow rows, report the stored grid."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated, cast

import typer

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    check_choice,
    console,
    count_progress,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.cli.json_output import FORMAT_HELP, check_output_format, write_json
from ragreplay.core.costs import cost_text
from ragreplay.errors import ConfigError
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_fit_judge, build_pairwise_judge, default_fit_judge
from ragreplay.judges.position import OrderMode
from ragreplay.providers.registry import ModelFactory
from ragreplay.report.compare_html import ROWS_SHOWN
from ragreplay.report.compare_json import FORMATS, render_comparison, write_json_report
from ragreplay.report.compare_text import build_comparison_renderable
from ragreplay.review.failure_tags import with_shadow_failure_tags
from ragreplay.settings import Settings
from ragreplay.shadow.judging import (
    ShadowJudges,
    judge_shadow,
    parse_since,
)
from ragreplay.shadow.rollup_summary import first_rows, iter_rows, rollup_figures
from ragreplay.store import Store

ORDERS = ("both", "random")


async def judge_with_progress(
    store: Store,
    settings: Settings,
    judge: str,
    fit_judge: str,
    order: OrderMode,
    seed: int | None,
    since: str,
    limit: int | None,
) -> Progress:
    """Judge the unjudged shadow rows newer than ``since`` with a progress bar (count, elapsed)."""
    start = parse_since(since)
    total = store.shadow_judgments.count_unjudged_shadow_rows(start)
    total = total if limit is None else min(total, limit)
    bar = count_progress()
    task = bar.add_task("judging shadow rows", total=total)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            judges = ShadowJudges(
                pairwise=build_pairwise_judge(judge, factory),
                fit_judge=build_fit_judge(fit_judge, factory),
                order=order,
                seed=seed,
                specs=(judge, fit_judge),
            )
            with bar:
                return await judge_shadow(
                    store,
                    writer,
                    judges,
                    since=start,
                    limit=limit,
                    concurrency=settings.concurrency,
                    on_row=lambda _: bar.advance(task),
                )
        finally:
            await factory.aclose()


def judge(
    since: Annotated[str, typer.Option(help="Rows newer than this age (7d, 24h, 30m) or ISO date")] = "7d",
    judge: Annotated[str, typer.Option(help="Pairwise judge: local, or provider:model")] = "local",
    fit_judge: Annotated[
        str | None, typer.Option(help="Agreement (FIT) judge [default: matches --judge]")
    ] = None,
    order: Annotated[str, typer.Option(help="both (judge each pair in both orders) | random")] = "both",
    seed: Annotated[int | None, typer.Option(help="Seed for the random order mode")] = None,
    limit: Annotated[int | None, typer.Option(help="Judge at most N rows")] = None,
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Rows judged at once [default: 16]")] = None,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    config: ConfigOption = None,
) -> None:
    """Judge the shadow rows not judged yet: agreement (FIT judge, champion answer vs candidate) and blind
    preference (pairwise judge). Each row is judged once; running it again judges only rows added since."""
    as_json = check_output_format(fmt)
    if order not in ORDERS:
        raise ConfigError(f"--order {order!r}: choose both or random")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: must be at least 1")
    parse_since(since)  # a bad --since fails before any store is opened
    settings = settings_from(config, db=db, concurrency=concurrency)
    with open_store(settings.db) as store:
        counts = asyncio.run(
            judge_with_progress(
                store,
                settings,
                judge,
                fit_judge or default_fit_judge(judge),
                cast(OrderMode, order),
                seed,
                since,
                limit,
            )
        )
        left = store.shadow_judgments.count_unjudged_shadow_rows()
    if as_json:
        write_json(
            {
                "since": since,
                "judged": counts.done,
                "errors": counts.errors,
                "unscorable": counts.unscorable,
                "cost_usd": counts.cost_usd,
                "unpriced_calls": counts.unpriced_calls,
                "unjudged_left": left,
            }
        )
        return
    err_console.print(
        f"judged {counts.done} shadow row(s) since {since}"
        + (f", {counts.errors} with a failed side (recorded as errors)" if counts.errors else "")
        + f"; judges' cost {cost_text(counts.cost_usd, counts.unpriced_calls)}"
        + f"; {left} unjudged row(s) left in the store",
        highlight=False,
    )


def report(
    since: Annotated[str, typer.Option(help="Rows newer than this age (7d, 24h, 30m) or ISO date")] = "7d",
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | html")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The champion-vs-challenger grid of the judged shadow rows: agreement, preference, consistency,
    latency, cost, per tag, the failure tags reviewers gave each challenger's rows and, where users rated the
    champion's answer, the GOOD/BAD verdict matrix.
    Calls no model: run `ragreplay shadow judge` first."""
    check_choice(fmt, FORMATS)
    start = parse_since(since)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        summary = with_shadow_failure_tags(store, rollup_figures(store, start).summary, start)
        if not any(s.n_cases for s in summary.challengers):
            err_console.print(
                f"no judged shadow rows since {since}: run `ragreplay shadow judge --since {since}` first",
                highlight=False,
            )
        if fmt == "json":
            write_json_report(summary, iter_rows(store, start), sys.stdout)
            return
        if fmt == "html":
            summary = summary.model_copy(update={"rows": first_rows(store, start, ROWS_SHOWN)})
    if fmt == "text":
        console.print(build_comparison_renderable(summary))
    else:
        sys.stdout.write(render_comparison(summary, fmt))
