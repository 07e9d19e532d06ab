"""``ragreplay retriever-diff``: rank every query with an old and a new retriever configuration (or take the
logged chunk ids as the old ranking) and diff the chunk lists per query and in aggregate (:mod:`core.ranking_diff`).

A side is a target file. A ``kind: builtin`` target is read ``k`` deep (its ``top_k`` becomes ``k``) and answers
extractively, so no model is called for a ranking; any other target gives the contexts of its answer (the
first ``k``). Queries run through the one job runner, ``concurrency`` at a time; nothing is stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ragreplay.core.ranking_diff import DiffAggregate, RankingDiff, aggregate_diffs, diff_rankings
from ragreplay.diagnosis.queries import DiffQuery
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.ports import Target
from ragreplay.targets.builtin_rag.config import AnswerConfig, BuiltinTargetConfig
from ragreplay.targets.config import read_target_file
from ragreplay.targets.loader import target_from_config

LOGGED = "logged"
"""The old side's name when the logged chunk ids stand for it."""


class Ranker(Protocol):
    """One side of the diff: ranks a query's chunk ids, best first, or says why it could not."""

    name: str

    async def rank(self, query: DiffQuery) -> tuple[list[str], str | None]:
        """The chunk ids, best first, and an error (``None`` when it ranked)."""
        ...

    async def aclose(self) -> None:
        """Release what the side holds."""
        ...


@dataclass
class TargetRanker:
    """A target's contexts as the ranking (the first ``k``)."""

    target: Target
    k: int
    name: str = ""

    async def rank(self, query: DiffQuery) -> tuple[list[str], str | None]:
        """The ids of the contexts the target answered ``query`` from."""
        answer = await self.target.answer(query.question, query.case)
        if answer.error is not None:
            return [], answer.error
        return [c.id for c in answer.contexts][: self.k], None

    async def aclose(self) -> None:
        """Close the target."""
        await self.target.aclose()


@dataclass
class LoggedRanker:
    """The chunk ids logged with each query."""

    name: str = LOGGED

    async def rank(self, query: DiffQuery) -> tuple[list[str], str | None]:
        """The logged ids, or an error when the query has none."""
        if query.logged is None:
            return [], "no chunk ids were logged for this query"
        return list(query.logged), None

    async def aclose(self) -> None:
        """Nothing to release."""


def load_ranker(path: Path, k: int) -> TargetRanker:
    """The side in the target file at ``path``; a builtin target is read ``k`` deep and answers extractively."""
    spec = read_target_file(path)
    cfg = spec.target
    if isinstance(cfg, BuiltinTargetConfig):
        retrieval = cfg.retrieval.model_copy(update={"top_k": k})
        cfg = cfg.model_copy(update={"retrieval": retrieval, "answer": AnswerConfig()})
    name = spec.name or path.stem
    return TargetRanker(target_from_config(cfg, path.parent, name, source=str(path)), k, name)


class QueryDiff(BaseModel):
    """One query's diff, or the error that kept a side from ranking it."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    diff: RankingDiff | None = None
    error: str | None = None


class RetrieverDiffReport(BaseModel):
    """Every query's diff, in input order, and the aggregate over the queries both sides ranked."""

    model_config = ConfigDict(frozen=True)

    old: str
    new: str
    queries_from: str
    k: int
    rows: list[QueryDiff]
    aggregate: DiffAggregate
    errors: int


@dataclass
class RetrieverDiffJob:
    """Ranks one query on both sides (at once) and diffs the two lists; results kept by query id."""

    old: Ranker
    new: Ranker
    k: int
    results: dict[str, QueryDiff] = field(default_factory=dict)

    async def run_one(self, query: DiffQuery) -> QueryDiff:
        """The query's diff; a side that fails makes an error row, never an exception."""
        (old, old_error), (new, new_error) = await asyncio.gather(self.old.rank(query), self.new.rank(query))
        error = old_error or new_error
        if error is not None:
            side = self.old.name if old_error else self.new.name
            row = QueryDiff(id=query.id, question=query.question, error=f"{side}: {error}")
        else:
            row = QueryDiff(id=query.id, question=query.question, diff=diff_rankings(old, new, self.k))
        self.results[query.id] = row
        return row

    def count(self, progress: Progress, result: QueryDiff) -> None:
        """An error row counts as an error."""
        if result.error is not None:
            progress.errors += 1


async def diff_retrievers(
    old: Ranker,
    new: Ranker,
    queries: Sequence[DiffQuery],
    *,
    k: int,
    queries_from: str,
    concurrency: int = 8,
    progress: ProgressCallback | None = None,
) -> RetrieverDiffReport:
    """Diff every query through the job runner; closes both sides when done."""
    job = RetrieverDiffJob(old, new, k)
    try:
        await run_job(
            job, JobPlan(todo=queries, progress=Progress(total=len(queries))), concurrency, progress
        )
    finally:
        await old.aclose()
        await new.aclose()
    rows = [job.results[q.id] for q in queries]
    diffs = [r.diff for r in rows if r.diff is not None]
    return RetrieverDiffReport(
        old=old.name,
        new=new.name,
        queries_from=queries_from,
        k=k,
        rows=rows,
        aggregate=aggregate_diffs(diffs, k),
        errors=sum(r.error is not None for r in rows),
    )
