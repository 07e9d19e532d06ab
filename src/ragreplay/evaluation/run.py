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
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ragreplay.core.chat import ProviderError
from ragreplay.core.eval import EvalRow, EvalSummary, MetricValue, RowScores, summarize
from ragreplay.core.retrieval_metrics import metric_value
from ragreplay.core.rubric import METRIC_PREFIX, Rubric
from ragreplay.core.runs import RunStatus
from ragreplay.core.types import Answer
from ragreplay.evaluation.identity import (
    RETRIEVAL_METRICS,
    config_hash,
    metric_order,
    run_config,
)
from ragreplay.evaluation.judged import JudgedRow, judge_row
from ragreplay.evaluation.target_rows import (
    UNSCORED,
    EvalTarget,
    answered_row,
    row_case,
    saved_answers,
    trace_of,
)
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.metrics.lexical import bleu, exact_match, rouge_l, token_f1
from ragreplay.metrics.llm import LLM_METRICS, PROMPT_VERSION
from ragreplay.ports import ChatModel
from ragreplay.providers.pricing import lookup_price
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.evals import EvalRowRecord, EvalRunRecord
from ragreplay.targets.base import answer_safely


def retrieval_scores(row: EvalRow, metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, MetricValue]:
    """The retrieval metrics of a row with judgments (none without)."""
    if row.judgments is None:
        return {}
    ranking = row.ranking()
    return {m: MetricValue.of(metric_value(m, ranking, row.judgments)) for m in metrics}


def has_reference(row: EvalRow) -> bool:
    """Whether the row has a non-blank reference."""
    return row.reference is not None and row.reference.strip() != ""


def lexical_scores(row: EvalRow) -> dict[str, MetricValue]:
    """BLEU (0-1), ROUGE-L, token F1 and exact match against the reference (none without one)."""
    if not has_reference(row) or row.reference is None:
        return {}
    ref = row.reference
    return {
        "bleu": MetricValue.of(bleu(row.answer, ref) / 100.0),
        "rouge_l": MetricValue.of(rouge_l(row.answer, ref)),
        "token_f1": MetricValue.of(token_f1(row.answer, ref)),
        "exact_match": MetricValue.of(1.0 if exact_match(row.answer, ref) else 0.0),
    }


@dataclass
class EvalJob:
    """Scores one row and saves it; a judge that fails after its retries makes an error row (retried on
    resume), never an exception."""

    eval_id: str
    judge: ChatModel | None
    writer: StoreWriter
    positions: Mapping[str, int]
    rubric: Rubric | None = None
    repeats: int = 1
    target: EvalTarget | None = None
    answers: dict[str, Answer] = field(default_factory=dict)
    """Answers an earlier attempt saved for rows not scored yet: used instead of asking the target again."""
    judge_priced: bool = True

    async def _answer(self, target: EvalTarget, row: EvalRow) -> Answer:
        """The saved answer, else the target's, saved before the judge is asked (when there is one)."""
        saved = self.answers.pop(row.id, None)
        if saved is not None:
            return saved
        answer = await answer_safely(target.target, row.question, row_case(row))
        if answer.error is None and self.judge is not None:
            pending = RowScores(row_id=row.id, tags=row.tags, question=row.question, target_answer=answer)
            await self._save(pending.model_copy(update={"error": UNSCORED}))
        return answer

    async def _save(self, scores: RowScores) -> RowScores:
        record = EvalRowRecord(
            eval_id=self.eval_id,
            row_id=scores.row_id,
            position=self.positions[scores.row_id],
            error=scores.error is not None,
            payload=scores.model_dump(mode="json"),
        )
        await self.writer.save_eval_rows([record])
        return scores

    async def run_one(self, row: EvalRow) -> RowScores:
        """Every metric of ``row`` (answered first by the target, when there is one), saved before it returns;
        a target that fails makes an error row (asked again on resume)."""
        answer, pricing = None, None
        if self.target is not None:
            answer, pricing = await self._answer(self.target, row), self.target.pricing
            if answer.error is not None:
                trace = trace_of(answer, pricing, None, self.judge_priced)
                failed = RowScores(row_id=row.id, tags=row.tags, question=row.question, trace=trace)
                update = {"target_answer": answer, "error": f"target: {answer.error}"}
                return await self._save(failed.model_copy(update=update))
            row = answered_row(row, answer)
        metrics = {**retrieval_scores(row), **lexical_scores(row)}
        judged, error = JudgedRow(), None
        if self.judge is not None:
            try:
                judged = await judge_row(self.judge, row, self.rubric, self.repeats)
            except ProviderError as exc:
                error = f"judge call failed: {exc}"
                judged = JudgedRow(calls=1)
            metrics.update(judged.metrics)
        scores = RowScores(
            row_id=row.id,
            tags=row.tags,
            question=row.question,
            answer=row.answer,
            metrics=metrics,
            claims=judged.claims,
            raw_reply=judged.raw_reply,
            calls=judged.calls,
            cached=judged.calls > 0 and judged.cached_calls == judged.calls,
            cost_usd=judged.cost_usd,
            unpriced_calls=judged.unpriced_calls,
            error=error,
            rubric=judged.rubric,
            repeats=judged.repeats,
            cached_calls=judged.cached_calls,
        )
        timed = judged if self.judge is not None and error is None else None
        trace = trace_of(answer, pricing, timed, self.judge_priced)
        return await self._save(scores.model_copy(update={"target_answer": answer, "trace": trace}))

    def count(self, progress: Progress, result: RowScores) -> None:
        """Errors, rows with an undetermined LLM metric (as unscorable) and cost."""
        if result.error is not None:
            progress.errors += 1
        elif any(
            value.value is None
            for name, value in result.metrics.items()
            if name in LLM_METRICS or name.startswith(METRIC_PREFIX)
        ):
            progress.unscorable += 1
        progress.cost_usd += result.cost_usd
        progress.unpriced_calls += result.unpriced_calls
        if result.trace is not None and result.trace.target_cost_usd:
            progress.cost_usd += result.trace.target_cost_usd
        elif result.trace is not None and result.trace.target_cost_usd is None:
            progress.unpriced_calls += 1


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
) -> tuple[EvalRunRecord, list[EvalRow], bool]:
    digest = config_hash(rows, judge_spec, rubric, repeats, target.target.version if target else None)
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
) -> EvalReport:
    """Score every row not saved yet, then summarize the whole run (see the module docstring); with a judge,
    ``rubric`` adds its criteria's metrics and ``repeats`` scores every row that many times; with a ``target``,
    it answers every row first (its answers saved, so a resume never asks it twice for a row)."""
    record, todo, resumed = _plan(store, rows, dataset, judge_spec, fresh, rubric, repeats, target)
    if on_plan is not None:
        on_plan(record, len(todo), resumed)
    if resumed and record.status == RunStatus.DONE and not todo:
        return stored_report(store, record)
    store.evals.set_eval_status(record.id, RunStatus.RUNNING)
    positions = {r.id: i for i, r in enumerate(rows)}
    answers = saved_answers(store, record.id) if resumed and target is not None else {}
    job = EvalJob(record.id, judge, writer, positions, rubric, repeats, target, answers, judge_priced)
    plan = JobPlan(todo=todo, progress=Progress(total=len(rows), done=len(rows) - len(todo)))
    try:
        await run_job(job, plan, concurrency, progress)
    except BaseException:
        store.evals.set_eval_status(record.id, RunStatus.INTERRUPTED)
        raise
    scored = stored_rows(store, record.id)
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
            )
        finally:
            if target is not None:
                await target.target.aclose()
            await factory.aclose()
