"""`ragreplay coverage` (does the corpus hold each reference's key facts?) and `ragreplay retriever-diff` (how do
two retrievers' chunk lists differ per query and overall?). Exit codes: 0 done, 1 some queries or LLM checks
errored (run the same command again: cached calls are not repeated), 2 a mistake in the input or the flags,
130 interrupted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    check_choice,
    count_progress,
    emit_text,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.core.costs import cost_text
from ragreplay.diagnosis.corpus_search import CorpusSearch, load_corpus_of
from ragreplay.diagnosis.coverage_run import CoverageReport, check_coverage, check_coverage_judged
from ragreplay.diagnosis.queries import DiffQuery, queries_from_file, queries_from_store
from ragreplay.diagnosis.retriever_diff import LoggedRanker, Ranker, diff_retrievers, load_ranker
from ragreplay.errors import ConfigError
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.jobs.runner import Progress
from ragreplay.report.coverage import DIAGNOSIS_FORMATS, render_coverage
from ragreplay.report.retriever_diff import render_retriever_diff

_FORMAT_HELP = "text | md | json"


def _interrupted() -> typer.Exit:
    err_console.print("\n[yellow]interrupted.[/yellow] Nothing was written; run the same command again.")
    return typer.Exit(130)


def coverage(
    dataset: Annotated[
        Path, typer.Argument(help="Eval dataset JSONL (docs/eval.md): rows with a 'reference' are checked")
    ],
    corpus: Annotated[
        Path, typer.Option(help="A 'kind: builtin' target file (its corpus and chunking) or a corpus folder")
    ],
    judge: Annotated[
        str | None,
        typer.Option(help="Also ask an LLM, one call per question (provider:model; fake:default offline)"),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help=_FORMAT_HELP)] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report to this file")] = None,
    db: Annotated[
        str | None, typer.Option(help="Store for the LLM check's cache [default: ragreplay.db]")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Questions checked at once [default: 16]")] = None,
    cache: Annotated[str | None, typer.Option(help="Model cache: read-write | read-only | off")] = None,
    config: ConfigOption = None,
) -> None:
    """Does any chunk of the corpus hold the key facts of each reference answer? Covered / partly / missing,
    and the missing-document candidates with their closest chunks.

    Facts are the reference's sentences (numbers, dates and names weigh more); the closest chunks of the whole
    corpus come from BM25 and the packaged embeddings. Exit 0 done, 1 some LLM checks errored, 2 a mistake.
    """
    check_choice(fmt, DIAGNOSIS_FORMATS)
    settings = settings_from(config, db=db, concurrency=concurrency, cache=cache)
    rows = read_eval_dataset(dataset)
    docs, chunking = load_corpus_of(corpus)
    bar = count_progress()
    task = bar.add_task("checking coverage", total=len(rows))

    def on_progress(p: Progress) -> None:
        cost = f" ({cost_text(p.cost_usd, p.unpriced_calls)})" if judge is not None else ""
        bar.update(task, completed=p.done, description=f"checking coverage{cost}")

    async def go() -> CoverageReport:
        search = await asyncio.to_thread(CorpusSearch.build, docs, chunking)
        where, named = str(corpus), str(dataset)
        if judge is None:
            return await check_coverage(
                rows,
                search,
                corpus=where,
                dataset=named,
                concurrency=settings.concurrency,
                progress=on_progress,
            )
        with open_store(settings.db, create=True) as store:
            return await check_coverage_judged(
                store, settings, rows, search, judge, corpus=where, dataset=named, progress=on_progress
            )

    try:
        with bar:
            report = asyncio.run(go())
    except KeyboardInterrupt:
        raise _interrupted() from None
    emit_text(render_coverage(report, fmt), output)
    errored = report.summary.judge_verdicts.get("error", 0)
    if errored:
        err_console.print(f"{errored} LLM check(s) failed: run the same command again to retry them")
        raise typer.Exit(1)


def _queries(source: str, db: str) -> tuple[list[DiffQuery], str]:
    path = Path(source)
    if path.is_file():
        return queries_from_file(path)
    with open_store(db) as store:
        return queries_from_store(store, source)


def retriever_diff(
    new: Annotated[Path, typer.Option(help="Target file of the new retriever configuration")],
    queries: Annotated[
        str,
        typer.Option(
            help="An ingested source or run id (its questions, pinned rewrites where pinned), an eval dataset "
            "(.jsonl) or a text file of questions, one per line"
        ),
    ],
    old: Annotated[
        Path | None,
        typer.Option(
            help="Target file of the old configuration [default: the chunk ids logged with each query]"
        ),
    ] = None,
    k: Annotated[int, typer.Option("-k", "--k", min=1, max=100, help="How deep the lists are compared")] = 10,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N queries")] = None,
    fmt: Annotated[str, typer.Option("--format", help=_FORMAT_HELP)] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report to this file")] = None,
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Queries ranked at once [default: 16]")] = None,
    config: ConfigOption = None,
) -> None:
    """Replay queries through an old and a new retriever configuration (or against the logged chunk ids) and
    diff the chunk lists per query (gained, dropped, moved, overlap@k, RBO) and overall.

    Per query: the gained, dropped and moved chunks, overlap@k, Jaccard and rank-biased overlap; overall: the
    means, the share of queries whose top 1 changed and the chunks and documents most often gained or dropped.
    A builtin target is read k deep. Exit 0 done, 1 some queries errored, 2 a mistake.
    """
    check_choice(fmt, DIAGNOSIS_FORMATS)
    settings = settings_from(config, db=db, concurrency=concurrency)
    found, label = _queries(queries, settings.db)
    found = found[:limit] if limit is not None else found
    if old is None and not any(q.logged for q in found):
        raise ConfigError(
            f"--queries {queries!r} has no logged chunk ids to stand for the old side. Fix: pass --old OLD.yaml, "
            "or queries from an ingested log whose AI messages carry 'retrieved'"
        )
    old_side: Ranker = load_ranker(old, k) if old is not None else LoggedRanker()
    new_side = load_ranker(new, k)
    bar = count_progress()
    task = bar.add_task("ranking", total=len(found))

    def on_progress(p: Progress) -> None:
        bar.update(task, completed=p.done)

    try:
        with bar:
            report = asyncio.run(
                diff_retrievers(
                    old_side,
                    new_side,
                    found,
                    k=k,
                    queries_from=label,
                    concurrency=settings.concurrency,
                    progress=on_progress,
                )
            )
    except KeyboardInterrupt:
        raise _interrupted() from None
    emit_text(render_retriever_diff(report, fmt), output)
    if report.errors:
        err_console.print(f"{report.errors} query(ies) errored: see the report")
        raise typer.Exit(1)
