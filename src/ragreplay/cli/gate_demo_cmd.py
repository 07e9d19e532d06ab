"""`ragreplay gate-demo`: the whole decision loop on the shipped HR data, offline, in one command.

Live traffic through the shadow proxy (the shadow demo), a regression set built from that shadow log, and the
challenger gated against the champion on it, all with the local judges and no network. The local pairwise
judge is weak on data it was not tuned on, so the gate stays inconclusive unless ``--accept-local-judge``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli import shadow_demo_cmd
from ragreplay.cli.common import console
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.core.gate import GatePolicy
from ragreplay.core.regset import DEFAULT_SIZES
from ragreplay.gate.run import gate_target_files
from ragreplay.regset.build import build_regset
from ragreplay.report.gate import render_gate_markdown, render_gate_text
from ragreplay.settings import Settings
from ragreplay.store import Store


def gate_demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's store and reports")] = Path(
        "ragreplay-gate-demo"
    ),
    accept_local_judge: Annotated[
        bool, typer.Option("--accept-local-judge", help="Let the local pairwise judge decide the gate")
    ] = False,
    requests: Annotated[int | None, typer.Option(help="Users' questions to send [default: all]")] = None,
) -> None:
    """Shadow traffic -> regression set -> gate on the shipped demo, offline; exits with the gate's code
    (0 pass, 1 fail, 2 inconclusive, 3 could not run)."""
    started = datetime.now(UTC) - timedelta(minutes=1)
    shadow_demo_cmd.demo(out=out, requests=requests, judge="local", concurrency=4)
    db = str(out / "shadow.db")
    data = demo_data_dir()
    console.print("\n[bold]regression set[/bold] from the shadow log just written")
    with Store.open(db) as store:
        built = build_regset(store, started, datetime.now(UTC) + timedelta(minutes=1), DEFAULT_SIZES, seed=0)
        counts = ", ".join(f"{n} {s}" for s, n in built.record.counts.items())
        console.print(f"v{built.record.version} ({built.record.id}): {counts}; {built.record.note}")
        console.print("\n[bold]gate[/bold]: the challenger against the champion on that set, local judges")
        report = asyncio.run(
            gate_target_files(
                store=store,
                settings=Settings(db=db, concurrency=8),
                set_ref=built.record.id,
                champion=data / "champion.yaml",
                challenger=data / "challenger.yaml",
                judge_spec="local",
                policy=GatePolicy(),
                accept_local_judge=accept_local_judge,
            )
        )
    console.print(render_gate_text(report), highlight=False, markup=False)
    path = out / "gate-report.md"
    path.write_text(render_gate_markdown(report), encoding="utf-8")
    console.print(f"Markdown report: {path.resolve()}")
    raise typer.Exit(report.verdict.exit_code)
