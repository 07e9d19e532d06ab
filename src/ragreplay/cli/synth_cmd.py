"""`ragreplay synth`: generate test questions from a corpus (single-hop, multi-hop, unanswerable, follow-up) with
reference answers and source chunk ids, by a model or, without one, by offline templates; saved as a golden set
version (``--name``) or written as JSONL.

Exit codes: 0 done, 1 some model calls failed after their retries (nothing is written: run the same command
again, the calls that succeeded come from the model cache), 2 a mistake in the flags or the corpus, 130
interrupted.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    count_progress,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.cli.golden_cmd import saved_line
from ragreplay.core.costs import cost_text
from ragreplay.datasets.export import to_jsonl, write_whole
from ragreplay.datasets.golden import save_rows
from ragreplay.datasets.synth import SynthResult, check_count, synthesize
from ragreplay.jobs.runner import Progress
from ragreplay.settings import Settings
from ragreplay.store import Store

SHOWN_PROBLEMS = 5


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


async def _run(
    store: Store, settings: Settings, corpus: Path, n: int, seed: int, model: str | None
) -> SynthResult:
    bar = count_progress()
    task = bar.add_task("generating", total=n)

    def on_progress(p: Progress) -> None:
        cost = cost_text(p.cost_usd, p.unpriced_calls)
        bar.update(task, completed=p.done, total=p.total, description=f"generating ({cost})")

    with bar:
        return await synthesize(store, settings, corpus, n, seed, model, progress=on_progress)


def _summary(result: SynthResult) -> None:
    kinds = Counter(t.partition("=")[2] for r in result.rows for t in r.tags if t.startswith("kind="))
    made = "template-made (no model)" if result.template_made else f"written by {result.recipe['model']}"
    _say(f"{len(result.rows)} questions, {made}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    if not result.template_made:
        _say(f"cost {cost_text(result.cost_usd, result.unpriced_calls)}")
    if result.merged:
        _say(f"{result.merged} near-duplicate question(s) merged into another")
    for kind, missing in result.short.items():
        _say(f"the corpus had {missing} {kind} question(s) too few: single-hop ones took their place")
    for problem in result.problems[:SHOWN_PROBLEMS]:
        _say(problem)
    if len(result.problems) > SHOWN_PROBLEMS:
        _say(f"... and {len(result.problems) - SHOWN_PROBLEMS} more")


def synth(
    corpus: Annotated[
        Path | None,
        typer.Option(help="Corpus folder, .jsonl corpus or kind: builtin target file [default: the demo's]"),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "--judge", help="provider:model that writes the items; without: offline templates"
        ),
    ] = None,
    n: Annotated[
        int, typer.Option("--n", help="Questions to generate (40% single-hop, 20% each of the others)")
    ] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the draw of chunks and sections")] = 0,
    name: Annotated[str | None, typer.Option(help="Save as the next version of this golden set")] = None,
    output: Annotated[
        Path | None, typer.Option(help="Write the rows as JSONL [default: stdout without --name]")
    ] = None,
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Model calls at once [default: 16]")] = None,
    cache: Annotated[str | None, typer.Option(help="Model cache: read-write | read-only | off")] = None,
    config: ConfigOption = None,
) -> None:
    """Generate test questions from a corpus (single-hop, multi-hop, unanswerable, follow-up) with reference
    answers and source chunk ids: a model, or offline templates; saved as a golden set version or JSONL.

    Multi-hop questions join two chunks, follow-ups are two turns; near-duplicates are merged. Without --model,
    offline templates write them (every row tagged made=template). The model's calls are cached: the same
    command again pays for none twice.
    """
    check_count(n)  # before the store is opened (or made) and the progress bar drawn
    settings = settings_from(config, db=db, concurrency=concurrency, cache=cache)
    path = corpus if corpus is not None else demo_data_dir() / "challenger.yaml"
    with open_store(settings.db, create=True) as store:
        try:
            result = asyncio.run(_run(store, settings, path, n, seed, model))
        except KeyboardInterrupt:
            _say("interrupted. Replies so far are cached; run the same command again to go on.")
            raise typer.Exit(130) from None
        _summary(result)
        if any(p for p in result.problems if "model call failed" in p):
            _say(
                "some model calls failed: nothing written. Run the same command again (done calls are cached)."
            )
            raise typer.Exit(1)
        if name is not None:
            _say(saved_line(save_rows(store, name, result.rows, result.recipe)))
    if output is not None:
        write_whole(output, to_jsonl(result.rows))
        _say(f"wrote {len(result.rows)} rows to {output}")
    elif name is None:
        sys.stdout.write(to_jsonl(result.rows))
