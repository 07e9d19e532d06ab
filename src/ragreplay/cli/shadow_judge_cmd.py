"""`ragreplay shadow judge` and `ragreplay shadow report`: judge the new shadow rows, report the stored grid."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
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
from ragreplay.cli.local_workers import check_lease, check_workers, report_failures, run_local_workers
from ragreplay.core.costs import cost_text
from ragreplay.errors import ConfigError
from ragreplay.jobs.claims import DEFAULT_LEASE_S, worker_id
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.shared_rate import StoreRateLimit
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
    SharedJudging,
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
    lease: float | None = None,
) -> Progress:
    """Judge the unjudged shadow rows newer than ``since`` with a progress bar (count, elapsed); with
    ``lease``, as one of several workers claiming rows from the store (leases of that many seconds) and
    sharing each provider's rate limit through it."""
    start = parse_since(since)
    total = store.shadow_judgments.count_unjudged_shadow_rows(start)
    total = total if limit is None else min(total, limit)
    bar = count_progress()
    task = bar.add_task("judging shadow rows", total=total)
    shared = None if lease is None else SharedJudging(store.work_claims, worker_id(), lease)
    rate = None if lease is None else StoreRateLimit(store.work_claims)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ, shared_rate=rate)
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
                    shared=shared,
                )
        finally:
            await factory.aclose()
            if rate is not None:
                rate.close()


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
    workers: Annotated[
        int | None,
        typer.Option(
            help="Judge as N worker processes that claim rows from the store (each row judged once, the "
            "providers' rate limits shared); run it on several machines against one PostgreSQL store to add "
            "theirs. --limit and --concurrency then apply to each worker"
        ),
    ] = None,
    lease: Annotated[
        float,
        typer.Option(
            help="With --workers: seconds a worker's claim lasts unrenewed (a dead worker's rows "
            "go to the others after this)"
        ),
    ] = DEFAULT_LEASE_S,
) -> None:
    """Judge the shadow rows not judged yet: agreement (FIT judge, champion answer vs candidate) and blind
    preference (pairwise judge). Each row is judged once; running it again judges only rows added since."""
    as_json = check_output_format(fmt)
    if order not in ORDERS:
        raise ConfigError(f"--order {order!r}: choose both or random")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: must be at least 1")
    check_workers(workers)
    check_lease(lease)
    parse_since(since)  # a bad --since fails before any store is opened
    settings = settings_from(config, db=db, concurrency=concurrency)
    fit_spec = fit_judge or default_fit_judge(judge)
    failed = 0
    with open_store(settings.db) as store:
        if workers is not None and workers > 1:
            argv = _worker_argv(settings, since, judge, fit_spec, order, seed, limit, lease, config)
            counts, failed = _judge_in_workers(store, argv, workers, since)
        else:
            counts = asyncio.run(
                judge_with_progress(
                    store,
                    settings,
                    judge,
                    fit_spec,
                    cast(OrderMode, order),
                    seed,
                    since,
                    limit,
                    lease=None if workers is None else lease,
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
    if failed:
        raise typer.Exit(failed)


def _worker_argv(
    settings: Settings,
    since: str,
    judge: str,
    fit_judge: str,
    order: str,
    seed: int | None,
    limit: int | None,
    lease: float,
    config: Path | None,
) -> list[str]:
    """One worker's command: this one with ``--workers 1`` and a JSON summary."""
    argv = ["shadow", "judge", "--since", since, "--judge", judge, "--fit-judge", fit_judge, "--order", order]
    argv += ["--db", settings.db, "--concurrency", str(settings.concurrency), "--workers", "1"]
    argv += ["--lease", str(lease), "--format", "json"]
    argv += [] if seed is None else ["--seed", str(seed)]
    argv += [] if limit is None else ["--limit", str(limit)]
    argv += [] if config is None else ["--config", str(config)]
    return argv


def _judge_in_workers(store: Store, argv: list[str], workers: int, since: str) -> tuple[Progress, int]:
    """Run ``workers`` worker processes of ``argv``; their counts added up, and the exit code of the first
    that failed (0: none did)."""
    start = parse_since(since)
    total = store.shadow_judgments.count_unjudged_shadow_rows(start)
    outcomes = run_local_workers(
        argv,
        workers,
        "judging shadow rows",
        total,
        lambda: store.shadow_judgments.count_unjudged_shadow_rows(start),
    )
    counts = Progress(total=total)
    for outcome in outcomes:
        summary = outcome.summary or {}
        counts.done += int(summary.get("judged", 0))
        counts.errors += int(summary.get("errors", 0))
        counts.unscorable += int(summary.get("unscorable", 0))
        counts.cost_usd += float(summary.get("cost_usd", 0.0))
        counts.unpriced_calls += int(summary.get("unpriced_calls", 0))
    return counts, report_failures(outcomes)


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
