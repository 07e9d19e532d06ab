"""``ragreplay coverage``: check every question of a dataset through the job runner, with the optional LLM check.

Nothing is stored but the judge's replies (the model cache, through the one store writer): the corpus
embeddings are cached on disk, so running the same command again re-embeds nothing and pays for no call twice.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from ragreplay.core.costs import total_cost
from ragreplay.core.eval import EvalRow
from ragreplay.core.run_summary import RateValue
from ragreplay.diagnosis.corpus_search import CorpusSearch
from ragreplay.diagnosis.coverage import (
    STATUSES,
    THRESHOLDS,
    QuestionCoverage,
    Status,
    check_question,
    skipped,
)
from ragreplay.diagnosis.coverage_judge import PROMPT_VERSION, judge_coverage
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.ports import ChatModel
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store


class CoverageSummary(BaseModel):
    """The counts of a coverage check: per status, skipped reasons, and the LLM check's verdicts."""

    model_config = ConfigDict(frozen=True)

    corpus: str
    dataset: str
    documents: int
    chunks: int
    questions: int
    counts: dict[str, int]
    skipped_reasons: dict[str, int]
    thresholds: dict[str, float]
    embedder: str
    judge: str | None = None
    judge_prompt: str | None = None
    judge_verdicts: dict[str, int] = {}
    judge_agreement: RateValue | None = None
    judge_cost_usd: float = 0.0
    judge_unpriced_calls: int = 0
    """The LLM check's calls whose price is unknown, not in ``judge_cost_usd`` (see ``core/costs``)."""


class CoverageReport(BaseModel):
    """A finished coverage check: the summary and every question, in dataset order."""

    model_config = ConfigDict(frozen=True)

    summary: CoverageSummary
    questions: list[QuestionCoverage]

    def with_status(self, status: Status) -> list[QuestionCoverage]:
        """The questions of one status, in dataset order."""
        return [q for q in self.questions if q.status == status]


@dataclass
class CoverageJob:
    """Checks one dataset row (CPU work in a thread) and, with a judge, asks it once; keeps every result by
    row id in ``results``."""

    search: CorpusSearch
    judge: ChatModel | None
    chunk_texts: Mapping[str, str]
    results: dict[str, QuestionCoverage] = field(default_factory=dict)

    async def run_one(self, row: EvalRow) -> QuestionCoverage:
        """The row's coverage (kept in ``results``); a row without a reference is skipped."""
        self.results[row.id] = result = await self._check(row)
        return result

    async def _check(self, row: EvalRow) -> QuestionCoverage:
        tags = list(row.tags)
        if row.reference is None or not row.reference.strip():
            return skipped(row.id, row.question, "no reference", tags)
        result = await asyncio.to_thread(
            check_question, self.search, row.id, row.question, row.reference, tags
        )
        if self.judge is None or result.status == "skipped":
            return result
        chunks = [(c.id, self.chunk_texts[c.id]) for c in result.closest]
        check = await judge_coverage(self.judge, row.question, row.reference, chunks)
        return result.model_copy(update={"judge": check})

    def count(self, progress: Progress, result: QuestionCoverage) -> None:
        """A failed judge call is an error, an unreadable reply unscorable; the judge's cost is added."""
        if result.judge is None:
            return
        if result.judge.error is not None:
            progress.errors += 1
        elif result.judge.verdict is None:
            progress.unscorable += 1
        progress.cost_usd += result.judge.cost_usd
        progress.unpriced_calls += result.judge.unpriced_calls


def summarize_coverage(
    questions: Sequence[QuestionCoverage],
    search: CorpusSearch,
    corpus: str,
    dataset: str,
    judge: str | None,
) -> CoverageSummary:
    """Counts per status (every status present, 0 included), skipped reasons, the judge's verdicts and its
    agreement with the lexical status on the questions both determined."""
    counts = Counter(q.status for q in questions)
    cost_usd, unpriced = total_cost(q.judge for q in questions)
    verdicts: Counter[str] = Counter()
    agree = compared = 0
    for q in questions:
        if q.judge is None:
            continue
        verdict = q.judge.verdict or ("error" if q.judge.error else "unreadable")
        verdicts[verdict] += 1
        if q.judge.verdict is not None:
            compared += 1
            agree += q.judge.verdict == q.status
    return CoverageSummary(
        corpus=corpus,
        dataset=dataset,
        documents=len(search.index.documents),
        chunks=len(search.chunks),
        questions=len(questions),
        counts={s: counts.get(s, 0) for s in STATUSES},
        skipped_reasons=dict(Counter(q.reason for q in questions if q.status == "skipped")),
        thresholds=dict(THRESHOLDS),
        embedder=search.embedder.name,
        judge=judge,
        judge_prompt=PROMPT_VERSION if judge else None,
        judge_verdicts=dict(verdicts),
        judge_agreement=(RateValue.of(agree, compared) if judge else None),
        judge_cost_usd=cost_usd,
        judge_unpriced_calls=unpriced,
    )


async def check_coverage(
    rows: Sequence[EvalRow],
    search: CorpusSearch,
    *,
    corpus: str,
    dataset: str,
    judge: ChatModel | None = None,
    judge_name: str | None = None,
    concurrency: int = 4,
    progress: ProgressCallback | None = None,
) -> CoverageReport:
    """Check every row through the job runner (progress per question); results keep the dataset's order."""
    job = CoverageJob(search, judge, {c.id: c.text for c in search.chunks})
    await run_job(job, JobPlan(todo=rows, progress=Progress(total=len(rows))), concurrency, progress)
    questions = [job.results[r.id] for r in rows]
    summary = summarize_coverage(questions, search, corpus, dataset, judge_name)
    return CoverageReport(summary=summary, questions=questions)


async def check_coverage_judged(
    store: Store,
    settings: Settings,
    rows: Sequence[EvalRow],
    search: CorpusSearch,
    judge_spec: str,
    *,
    corpus: str,
    dataset: str,
    progress: ProgressCallback | None = None,
) -> CoverageReport:
    """:func:`check_coverage` with the judge built from ``judge_spec``, its replies cached in the store
    through the one writer; closes what it opened."""
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            judge = factory.build(judge_spec)
            return await check_coverage(
                rows,
                search,
                corpus=corpus,
                dataset=dataset,
                judge=judge,
                judge_name=judge_spec,
                concurrency=settings.concurrency,
                progress=progress,
            )
        finally:
            await factory.aclose()
