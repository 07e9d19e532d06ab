"""`ragreplay demo`: the whole replay job on shipped sample data, offline, with no API key."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import console
from ragreplay.cli.run_cmd import run_replay
from ragreplay.demo.sample import build_sample
from ragreplay.ingest import ingest_file
from ragreplay.report import render
from ragreplay.report.terminal import build_renderable
from ragreplay.service import select_cases, summarize_run
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.loader import load_target

TARGET_YAML = """\
name: candidate-november
target:
  kind: logged
  log: candidate.jsonl
  match: turn
"""


def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's logs, store and report")] = Path(
        "ragreplay-demo"
    ),
    judge: Annotated[str, typer.Option(help="Judge spec; a real endpoint works too")] = "fake:default",
    conversations: Annotated[int, typer.Option(help="Conversations in the sample log")] = 60,
) -> None:
    """Ingest a sample production log, replay it against a candidate's log, judge, and report."""
    if out.exists():
        shutil.rmtree(out)
    sample = build_sample(conversations)
    production, _ = sample.write(out)
    target_path = out / "candidate.yaml"
    target_path.write_text(TARGET_YAML, encoding="utf-8")
    db = str(out / "ragreplay.db")
    console.print(f"[bold]ragreplay demo[/bold]: {len(sample.production)} conversations in {production}")
    if judge.startswith("fake:"):
        console.print(
            "[yellow]judge: the shipped deterministic fake (word overlap). It shows the pipeline working; it is "
            "not a semantic judge. Pass --judge provider:model for a real one.[/yellow]"
        )
    store = Store.open(db)
    try:
        summary = ingest_file(production, store)
        console.print(f"ingested {summary.conversations} conversations -> {summary.cases} labelled cases")
        settings = Settings(db=db, judge=judge)
        run = asyncio.run(
            run_replay(
                store, settings, load_target(target_path), select_cases(store), {"source_ids": None}, False
            )
        )
        result = summarize_run(store, run.id)
    finally:
        store.close()
    console.print(build_renderable(result, examples=5))
    report_path = out / "report.md"
    report_path.write_text(render(result, "md"), encoding="utf-8")
    console.print(f"\nreport: {report_path.resolve()}")
