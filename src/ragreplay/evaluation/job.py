"""The eval job: one row answered (by the target, when there is one), scored and saved.

The endpoint is kept busy while rows wait for their saves: ``concurrency`` bounds the rows *calling* (the
target or the judge) at once, through :attr:`EvalJob.slots`, and the runner runs :data:`WORKERS_PER_SLOT` times
as many workers, so a row waiting for the writer's commit (a few milliseconds, one transaction per tick) holds
no call slot while the next row takes it. ``run_one`` still returns only once its row is committed, and a row's
steps keep their order (the target's answer saved before the judge is asked), so a run killed at any point
resumes as before: no target call repeated for a saved answer, the judge's replies from the model cache.

The lexical metrics' libraries (rouge-score pulls in nltk and scipy: seconds on a busy machine) are imported by
:func:`load_lexical_backends` off the event loop before the first row, only when a row has a reference, so no
call in flight stalls behind the import.

With ``rows_per_call`` above 1 (``ragreplay eval --rows-per-call``) the judge's claims checks go through one
:class:`~ragreplay.metrics.llm_batch.ClaimsBatcher`: ``concurrency`` calls' worth of rows are judged at once
(:attr:`EvalJob.judge_slots`) and the runner keeps as many more rows in flight, so full groups form.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ragreplay.core.chat import ProviderError
from ragreplay.core.eval import EvalRow, MetricValue, RowScores
from ragreplay.core.retrieval_metrics import metric_value
from ragreplay.core.rubric import METRIC_PREFIX, Rubric
from ragreplay.core.types import Answer
from ragreplay.evaluation.identity import RETRIEVAL_METRICS
from ragreplay.evaluation.judged import JudgedRow, judge_row
from ragreplay.evaluation.target_rows import UNSCORED, EvalTarget, answered_row, row_case, trace_of
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.metrics.lexical import bleu, exact_match, load_backends, rouge_l, token_f1
from ragreplay.metrics.llm import LLM_METRICS
from ragreplay.metrics.llm_batch import ClaimsBatcher
from ragreplay.ports import ChatModel
from ragreplay.store.evals import EvalRowRecord
from ragreplay.targets.base import answer_safely

WORKERS_PER_SLOT = 2
"""Rows in flight per call slot: one calling while the one before it waits for its save."""


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
    """BLEU (0-1), ROUGE-L, SQuAD v1.1's token F1 and exact match against the reference (none without one)."""
    if not has_reference(row) or row.reference is None:
        return {}
    ref = row.reference
    return {
        "bleu": MetricValue.of(bleu(row.answer, ref) / 100.0),
        "rouge_l": MetricValue.of(rouge_l(row.answer, ref)),
        "token_f1": MetricValue.of(token_f1(row.answer, ref)),
        "exact_match": MetricValue.of(1.0 if exact_match(row.answer, ref) else 0.0),
    }


async def load_lexical_backends(rows: Iterable[EvalRow]) -> bool:
    """Import the lexical metrics' libraries in a worker thread when some row has a reference; whether it did."""
    if not any(has_reference(row) for row in rows):
        return False
    await asyncio.to_thread(load_backends)
    return True


@dataclass
class EvalJob:
    """Scores one row and saves it; a judge that fails after its retries makes an error row (retried on
    resume), never an exception. At most ``concurrency`` rows call the target or the judge at once."""

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
    concurrency: int = 16
    rows_per_call: int = 1
    """Rows sharing one claims-check call (see :mod:`ragreplay.metrics.llm_batch`)."""
    slots: asyncio.Semaphore = field(init=False)
    """Held while a row calls the target, never while it waits for a save."""
    judge_slots: asyncio.Semaphore = field(init=False)
    """Held while a row is being judged: ``concurrency`` calls' worth of rows (``rows_per_call`` per call);
    :attr:`slots` itself with one row a call."""
    batcher: ClaimsBatcher | None = field(init=False, default=None)
    saved: dict[str, RowScores] = field(init=False, default_factory=dict)
    """The last scores saved for each row this job ran, as committed: the run's report is built from them
    without reading the rows back (see :func:`ragreplay.evaluation.run.final_rows`)."""

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(max(1, self.concurrency))
        # One row a call: the target and the judge share the slots, as they always have.
        batched = max(1, self.concurrency) * self.rows_per_call
        self.judge_slots = self.slots if self.rows_per_call <= 1 else asyncio.Semaphore(batched)
        if self.judge is not None:
            self.batcher = ClaimsBatcher(self.judge, self.rows_per_call)

    @property
    def workers(self) -> int:
        """How many rows the runner keeps in flight (see :data:`WORKERS_PER_SLOT`)."""
        return WORKERS_PER_SLOT * max(1, self.concurrency) * max(1, self.rows_per_call)

    async def _answer(self, target: EvalTarget, row: EvalRow) -> Answer:
        """The saved answer, else the target's, saved before the judge is asked (when there is one)."""
        saved = self.answers.pop(row.id, None)
        if saved is not None:
            return saved
        async with self.slots:
            answer = await answer_safely(target.target, row.question, row_case(row))
        if answer.error is None and self.judge is not None:
            pending = RowScores(row_id=row.id, tags=row.tags, question=row.question, target_answer=answer)
            await self._save(pending.model_copy(update={"error": UNSCORED}))
        return answer

    async def _judge(self, judge: ChatModel, row: EvalRow) -> tuple[JudgedRow, str | None]:
        """The row's judged metrics, or an empty one and the error of a call that failed after its retries."""
        async with self.judge_slots:
            try:
                return await judge_row(judge, row, self.rubric, self.repeats, self.batcher), None
            except ProviderError as exc:
                return JudgedRow(calls=1), f"judge call failed: {exc}"

    async def _save(self, scores: RowScores) -> RowScores:
        record = EvalRowRecord(
            eval_id=self.eval_id,
            row_id=scores.row_id,
            position=self.positions[scores.row_id],
            error=scores.error is not None,
            payload=scores.model_dump(mode="json"),
        )
        await self.writer.save_eval_rows([record])
        self.saved[scores.row_id] = scores
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
        judged, error = JudgedRow(), None
        if self.judge is None:
            metrics = {**retrieval_scores(row), **lexical_scores(row)}
        else:
            # The row's own metrics while its judge call is out, not before it (the call would go later) nor
            # after (work between a reply and the save delays the rows whose calls wait to be sent).
            judging = asyncio.ensure_future(self._judge(self.judge, row))
            try:
                await asyncio.sleep(0)  # the judge's task takes its first step: the request is sent
                metrics = {**retrieval_scores(row), **lexical_scores(row)}
                judged, error = await judging
            finally:
                if not judging.done():  # cancelled, or the metrics raised: the call is not left behind
                    judging.cancel()
                    await asyncio.gather(judging, return_exceptions=True)
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
