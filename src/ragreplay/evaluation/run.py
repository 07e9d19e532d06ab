"""Evaluate a dataset: per row the retrieval metrics (when judgments are given), the lexical metrics (when a
reference is given) and the LLM-judged metrics (one judge call per row), run by :func:`~ragreplay.jobs.runner.run_job`
and saved through the one :class:`~ragreplay.jobs.writer.StoreWriter`.

A run is identified by the hash of the dataset's content, the judge, its prompt version and the metrics asked for.
The same command on an unfinished run resumes it (saved rows are kept, the judge's replies come from the model
cache); on a finished one it shows the stored rows again without a call, retrying only rows that errored;
``fresh`` starts anew.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ragreplay.core.eval import EvalRow, EvalSummary, RowScores, summarize
from ragreplay.core.rubric import Rubric
from ragreplay.core.runs import RunStatus
from ragreplay.evaluation.identity import config_hash, metric_order, run_config
from ragreplay.evaluation.job import (
    EvalJob,
    has_reference,
    lexical_scores,
    load_lexical_backends,
    retrieval_scores,
)
from ragreplay.evaluation.target_rows import EvalTarget, saved_answers
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.metrics.llm import PROMPT_VERSION
from ragreplay.ports import ChatModel
from ragreplay.providers.pricing import lookup_price
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.evals import EvalRunRecord

__all__ = [
    "EvalJob",
    "EvalReport",
    "evaluate",
    "evaluate_dataset",
    "final_rows",
    "has_reference",
    "lexical_scores",
    "retrieval_scores",
    "stored_report",
    "stored_rows",
]


@dataclass(frozen=True)
class EvalReport:
    """A finished (or re-shown) eval run: its record, every row's scores and the summary."""

    record: EvalRunRecord
    rows: tuple[RowScores, ...]
    summary: EvalSummary
    resumed: bool = False
    reshown: bool = False


PlanCallback = Callable[[EvalRunRecord, int, bool], None]
"""Told the run, how many rows are left and whether it resumes, before any row is scored."""


def stored_rows(store: Store, eval_id: str) -> tuple[RowScores, ...]:
    """The saved rows of an eval run, in dataset order."""
    return tuple(RowScores.model_validate(r.payload) for r in store.evals.load_eval_rows(eval_id))


def final_rows(
    store: Store, eval_id: str, rows: Sequence[EvalRow], saved: Mapping[str, RowScores]
) -> tuple[RowScores, ...]:
    """Every row's scores in dataset order: those ``saved`` by this attempt when it scored every row (a fresh
    run: nothing to read back), else the store's (a resumed run also has rows saved before)."""
    if len(saved) == len(rows) and all(row.id in saved for row in rows):
        return tuple(saved[row.id] for row in rows)
    return stored_rows(store, eval_id)


def stored_report(store: Store, record: EvalRunRecord) -> EvalReport:
    """An eval run shown again from its saved rows: no call is made."""
    rows = stored_rows(store, record.id)
    return EvalReport(record=record, rows=rows, summary=summarize(rows, metric_order(record)), reshown=True)


def _plan(
    store: Store,
    rows: Sequence[EvalRow],
    dataset: str,
    judge_spec: str | None,
    fresh: bool,
    rubric: Rubric | None,
    repeats: int,
    target: EvalTarget | None = None,
    rows_per_call: int = 1,
) -> tuple[EvalRunRecord, list[EvalRow], bool]:
    version = target.target.version if target else None
    digest = config_hash(rows, judge_spec, rubric, repeats, version, rows_per_call if judge_spec else 1)
    existing = None if fresh else store.evals.find_eval(digest)
    if existing is not None:
        done = store.evals.scored_row_ids(existing.id)
        return existing, [r for r in rows if r.id not in done], True
    now = datetime.now(UTC)
    record = EvalRunRecord(
        id=f"eval_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}",
        created_at=now,
        status=RunStatus.RUNNING,
        dataset=dataset,
        judge=judge_spec or "",
        prompt_version=PROMPT_VERSION if judge_spec else "",
        config=run_config(
            len(rows),
            rubric if judge_spec else None,
            repeats if judge_spec else 1,
            target.describe() if target else None,
            rows_per_call if judge_spec else 1,
        ),
        config_hash=digest,
        n_rows=len(rows),
    )
    store.evals.create_eval(record)
    return record, list(rows), False


async def evaluate(
    store: Store,
    writer: StoreWriter,
    rows: Sequence[EvalRow],
    dataset: str,
    judge: ChatModel | None,
    judge_spec: str | None,
    concurrency: int = 16,
    fresh: bool = False,
    on_plan: PlanCallback | None = None,
    progress: ProgressCallback | None = None,
    rubric: Rubric | None = None,
    repeats: int = 1,
    target: EvalTarget | None = None,
    judge_priced: bool = True,
    rows_per_call: int = 1,
) -> EvalReport:
    """Score every row not saved yet, then summarize the whole run (see the module docstring); with a judge,
    ``rubric`` adds its criteria's metrics and ``repeats`` scores every row that many times; with a ``target``,
    it answers every row first (its answers saved, so a resume never asks it twice for a row). ``concurrency``
    rows call at once, and as many more may be waiting for their saves (see :mod:`ragreplay.evaluation.job`);
    ``rows_per_call`` rows share each claims-check call (:mod:`ragreplay.metrics.llm_batch`)."""
    record, todo, resumed = _plan(
        store, rows, dataset, judge_spec, fresh, rubric, repeats, target, rows_per_call
    )
    if on_plan is not None:
        on_plan(record, len(todo), resumed)
    if resumed and record.status == RunStatus.DONE and not todo:
        return stored_report(store, record)
    store.evals.set_eval_status(record.id, RunStatus.RUNNING)
    positions = {r.id: i for i, r in enumerate(rows)}
    answers = saved_answers(store, record.id) if resumed and target is not None else {}
    job = EvalJob(
        record.id,
        judge,
        writer,
        positions,
        rubric,
        repeats,
        target,
        answers,
        judge_priced,
        concurrency,
        rows_per_call,
    )
    plan = JobPlan(todo=todo, progress=Progress(total=len(rows), done=len(rows) - len(todo)))
    try:
        await load_lexical_backends(todo)
        await run_job(job, plan, job.workers, progress)
    except BaseException:
        store.evals.set_eval_status(record.id, RunStatus.INTERRUPTED)
        raise
    scored = final_rows(store, record.id, rows, job.saved)
    summary = summarize(scored, metric_order(record))
    store.evals.finish_eval(record.id, summary.model_dump(mode="json"))
    finished = store.evals.get_eval(record.id) or record
    return EvalReport(record=finished, rows=scored, summary=summary, resumed=resumed)


async def evaluate_dataset(
    store: Store,
    settings: Settings,
    rows: Sequence[EvalRow],
    dataset: str,
    judge_spec: str | None,
    fresh: bool = False,
    env: Mapping[str, str] | None = None,
    on_plan: PlanCallback | None = None,
    progress: ProgressCallback | None = None,
    rubric: Rubric | None = None,
    repeats: int = 1,
    target: EvalTarget | None = None,
    rows_per_call: int = 1,
) -> EvalReport:
    """:func:`evaluate` with the judge built from ``judge_spec`` (``provider:model``; ``None``: no LLM metrics),
    its calls cached in the store through the one writer; closes everything it opened and the ``target``."""
    async with StoreWriter(store) as writer:
        factory = ModelFactory(
            settings.model_settings(), cache=writer, env=env if env is not None else os.environ
        )
        try:
            judge = factory.build(judge_spec) if judge_spec else None
            return await evaluate(
                store,
                writer,
                rows,
                dataset,
                judge,
                judge_spec,
                concurrency=settings.concurrency,
                fresh=fresh,
                on_plan=on_plan,
                progress=progress,
                rubric=rubric,
                repeats=repeats,
                target=target,
                judge_priced=judge_spec is None or lookup_price(judge_spec, factory.prices) is not None,
                rows_per_call=rows_per_call,
            )
        finally:
            if target is not None:
                await target.target.aclose()
            await factory.aclose()
