"""`ragreplay triage`: sort a run's BAD_NO_FIT cases into likely fixed, likely worse and changed-but-unclear."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated, cast

import typer

from ragreplay.cli.common import ConfigOption, DbOption, check_choice, console, open_store, settings_from
from ragreplay.compare.triage import TriageReport, triage_run
from ragreplay.errors import ConfigError
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_pairwise_judge
from ragreplay.judges.position import OrderMode
from ragreplay.providers.registry import ModelFactory
from ragreplay.report.compare_triage import FORMATS, build_triage_renderable, render_triage
from ragreplay.settings import Settings
from ragreplay.store import Store


async def _triage(
    store: Store, settings: Settings, run_id: str, judge: str, order: OrderMode, seed: int | None
) -> TriageReport:
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            pairwise = build_pairwise_judge(judge, factory)
            return await triage_run(store, run_id, pairwise, order, seed, settings.concurrency)
        finally:
            await factory.aclose()


def triage(
    run_id: Annotated[str, typer.Argument(help="Replay run id or a unique prefix of it")],
    judge: Annotated[str, typer.Option(help="Pairwise judge: local, or provider:model")],
    order: Annotated[str, typer.Option(help="both (judge each pair in both orders) | random")] = "both",
    seed: Annotated[int | None, typer.Option(help="Seed for the random order mode")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | md | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Judge the old answer against the new one for every BAD_NO_FIT case of a run (blind, both orders by
    default) and list them as likely fixed (new wins), likely worse (old wins) or changed, unclear."""
    check_choice(fmt, FORMATS)
    if order not in ("both", "random"):
        raise ConfigError(f"--order {order!r}: choose both or random")
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        report = asyncio.run(_triage(store, settings, run_id, judge, cast(OrderMode, order), seed))
    if fmt == "text":
        console.print(build_triage_renderable(report))
    else:
        sys.stdout.write(render_triage(report, fmt))
