"""`ragreplay shadow demo`: the shadow rig on the shipped HR data, offline, with local judges."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import console, count_progress
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.cli.shadow_judge_cmd import judge_with_progress
from ragreplay.demo.shadow_demo import first_questions, run_traffic
from ragreplay.errors import ConfigError
from ragreplay.ingest import ingest_file
from ragreplay.judges.build import default_fit_judge
from ragreplay.replay.replay_run import select_cases
from ragreplay.report.compare_json import render_comparison
from ragreplay.report.compare_text import build_comparison_renderable
from ragreplay.settings import Settings
from ragreplay.shadow.judging import parse_since, stored_shadow_summary
from ragreplay.store import Store

WINDOW = "1d"


def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's store and report")] = Path(
        "ragreplay-shadow-demo"
    ),
    requests: Annotated[
        int | None, typer.Option(help="Users' questions to send [default: every opening question]")
    ] = None,
    judge: Annotated[str, typer.Option(help="Pairwise judge: local, or provider:model")] = "local",
    concurrency: Annotated[int, typer.Option(help="Users asking at once")] = 4,
) -> None:
    """Put the proxy in front of the shipped champion RAG app, shadow every question to the challenger, feed
    back the users' logged thumbs through the app's feedback endpoint, judge the log and report."""
    if requests is not None and requests < 1:
        raise ConfigError(f"--requests {requests}: must be at least 1")
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: must be at least 1")
    data = demo_data_dir()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    db = str(out / "shadow.db")
    with Store.open(db) as store:
        ingest_file(data / "production.jsonl", store)
        cases = first_questions(select_cases(store), requests)
    console.print(
        f"[bold]ragreplay shadow demo[/bold]: champion and challenger RAG apps on 127.0.0.1, the shadow proxy "
        f"in front; {len(cases)} users ask an opening question from the shipped log and give its logged thumbs"
    )
    bar = count_progress()
    with bar:
        task = bar.add_task("live traffic through the proxy", total=len(cases))
        traffic = run_traffic(data, out, db, cases, concurrency, on_done=lambda: bar.advance(task))
    final = traffic.proxy_stats["shadow_final"]
    mirror = traffic.proxy_stats["mirror"]
    console.print(
        f"users answered by the champion: {traffic.answered}/{traffic.requests} (failed: {traffic.failed}); "
        f"shadow rows written: {final['rows_written']} (challenger errors {final['challenger_errors']}, "
        f"timeouts {final['challenger_timeouts']}, lost {final['rows_lost']}); thumbs read on the way to the "
        f"app: {mirror['feedback_recorded']}, stored: {final['feedback_written']}"
    )
    settings = Settings(db=db, concurrency=8)
    with Store.open(db) as store:
        counts = asyncio.run(
            judge_with_progress(store, settings, judge, default_fit_judge(judge), "both", 0, WINDOW, None)
        )
        summary = stored_shadow_summary(store, parse_since(WINDOW))
    console.print(f"judged {counts.done} shadow row(s) ({counts.errors} with a failed side)")
    console.print(build_comparison_renderable(summary))
    report = out / "shadow-report.md"
    report.write_text(render_comparison(summary, "md"), encoding="utf-8")
    console.print(f"\nMarkdown report: {report.resolve()}")
