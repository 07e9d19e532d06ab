"""`ragreplay demo`: the whole replay job on the shipped HR corpus and log, offline, with local judges, then the
review loop with simulated reviewers (the demo's ground truth standing in for people)."""

from __future__ import annotations

import asyncio
import shutil
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragreplay.cli.common import console
from ragreplay.cli.review_cmd import render_text as render_calibration
from ragreplay.cli.run_cmd import run_replay
from ragreplay.core.review import taxonomy
from ragreplay.core.run_summary import RunSummary
from ragreplay.core.types import Verdict
from ragreplay.demo.configs import demo_config
from ragreplay.demo.review_loop import SimulatedLoop, simulate_review_loop
from ragreplay.demo.simulated_reviewers import SLIP_RATE
from ragreplay.ingest import ingest_file
from ragreplay.judges.local_pairwise import LocalPairwiseJudge
from ragreplay.replay.replay_run import select_cases, summarize_run
from ragreplay.report import render
from ragreplay.report.failure_tags import failure_tags_renderable
from ragreplay.report.labels import RATE_LABELS, rate_of, rate_text, truncate
from ragreplay.review.failure_tags import with_run_failure_tags
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.loader import load_target

DEMO_DATA = "demo/data"


def demo_data_dir() -> Path:
    """The folder of the shipped demo data (corpus, production log, configs, ground truth)."""
    return Path(str(resources.files("ragreplay"))) / DEMO_DATA


def _print_summary(result: RunSummary, top: int) -> None:
    matrix = Table(title="Verdicts (replayed through the challenger)")
    for col in ("users said", "new answer fits", "new answer differs"):
        matrix.add_column(col)
    counts = result.rates.counts
    matrix.add_row("GOOD", str(counts[Verdict.GOOD_FIT]), str(counts[Verdict.GOOD_NO_FIT]))
    matrix.add_row("BAD", str(counts[Verdict.BAD_FIT]), str(counts[Verdict.BAD_NO_FIT]))
    console.print(matrix)
    console.print(
        f"unscorable: {result.n_unscorable}   errors: {result.n_errors}   skipped at ingest: "
        f"{sum(result.skipped.values())}"
    )
    rates = Table(title="Rates with 95% Wilson intervals")
    rates.add_column("rate")
    rates.add_column(escape("value [interval] (k/n)"))
    for key, label, _ in RATE_LABELS:
        rates.add_row(label, rate_text(rate_of(result.rates, key)))
    console.print(rates)
    review = Table(title=f"Top BAD_NO_FIT rows for review ({len(result.review)} in all)", show_lines=True)
    for col in ("case", "question replayed", "old answer", "new answer", "chunks old → new"):
        review.add_column(col, overflow="fold")
    for row in result.review[:top]:
        review.add_row(
            row.case_id,
            truncate(row.question or row.query, 90),
            truncate(row.old_answer, 90),
            truncate(row.new_answer, 90),
            f"{', '.join(row.old_chunk_ids) or '–'} → {', '.join(row.new_chunk_ids) or '–'}",
        )
    console.print(review)


def _print_review_loop(loop: SimulatedLoop, result: RunSummary) -> None:
    console.print(
        "\n[bold]review loop with SIMULATED reviewers[/bold]: the demo's ground truth stands in for people "
        f"(reviewers {', '.join(loop.reviews)}; each slips on about {SLIP_RATE:.0%} of items)",
        highlight=False,
    )
    console.print(
        f"calibration queue {loop.queue.id}: {loop.queue.n_items} of the run's cases, spread over the verdicts, "
        "judged blind old vs new by local:pairwise in both orders",
        highlight=False,
    )
    done = ", ".join(f"{who} reviewed {n}" for who, n in loop.reviews.items())
    console.print(f"{done}; {loop.shared} item(s) reviewed by both", highlight=False)
    console.print("calibration of the judge against the SIMULATED reviewers (not people):", style="bold")
    console.print(render_calibration(loop.report).rstrip(), highlight=False, markup=False)
    if result.failure_tags is not None:
        console.print(
            failure_tags_renderable(result.failure_tags, "failure tags the simulated reviewers gave")
        )


def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's store and report")] = Path(
        "ragreplay-demo"
    ),
    judge: Annotated[
        str, typer.Option(help="FIT judge: local, or provider:model for a real endpoint")
    ] = "local",
    rewriter: Annotated[
        str,
        typer.Option(
            help="Follow-up rewriter: local:concat (earlier questions prepended: the demo log's follow-ups are "
            "elliptical), local (pronouns resolved), none, or provider:model"
        ),
    ] = "local:concat",
    provider: Annotated[
        str | None,
        typer.Option(help="provider:model that writes the challenger's answers (default: extractive)"),
    ] = None,
    top: Annotated[int, typer.Option(help="BAD_NO_FIT rows to print")] = 5,
) -> None:
    """Ingest the shipped production log, replay it through the challenger RAG, judge locally, report; then a
    calibration queue of the run reviewed by simulated reviewers (the ground truth) and the judge calibrated."""
    data = demo_data_dir()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    db = str(out / "ragreplay.db")
    console.print(f"[bold]ragreplay demo[/bold]: shipped HR corpus and production log in {data}")
    store = Store.open(db)
    try:
        ingested = ingest_file(data / "production.jsonl", store)
        console.print(
            f"ingested {ingested.conversations} conversations -> {ingested.cases} labelled cases "
            f"({ingested.skipped} messages skipped, by reason in the report)"
        )
        settings = Settings(db=db, judge=judge, rewriter=rewriter, concurrency=8)
        target = load_target(demo_config(data, "challenger", out, provider))
        run = asyncio.run(
            run_replay(store, settings, target, select_cases(store), {"source_ids": None}, False)
        )
        result = summarize_run(store, run.id)
        _print_summary(result, top)
        loop = simulate_review_loop(store, run.id, data, LocalPairwiseJudge(), taxonomy())
        result = with_run_failure_tags(store, result)
    finally:
        store.close()
    _print_review_loop(loop, result)
    report = out / "report.html"
    report.write_text(render(result, "html"), encoding="utf-8")
    console.print(f"\nHTML report: {report.resolve()}")
