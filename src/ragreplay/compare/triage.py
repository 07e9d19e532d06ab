"""Triage of a replay run's BAD_NO_FIT cases: users disliked the old answer and the new one differs. A blind
pairwise judge of old vs new sorts them into likely fixed, likely worse, and changed but unclear."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.pairwise import PairwiseSide
from ragreplay.core.runs import ResultRecord
from ragreplay.core.types import Case, Verdict
from ragreplay.errors import RagreplayError
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.judges.position import OrderMode, PairOutcome, judge_pair
from ragreplay.ports import PairwiseJudge
from ragreplay.store import Store

TriageLabel = Literal["likely fixed", "likely worse", "changed, unclear"]
LABELS: tuple[TriageLabel, ...] = ("likely fixed", "likely worse", "changed, unclear")
"""In report order: new wins first."""


class TriageRow(BaseModel):
    """One BAD_NO_FIT case with the pairwise judge's decision on old vs new."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    question: str
    old_answer: str
    new_answer: str
    old_chunk_ids: list[str]
    new_chunk_ids: list[str]
    label: TriageLabel
    winner: Literal["old", "new", "tie"] | None
    consistent: bool | None
    reason: str
    tags: dict[str, str]


class TriageReport(BaseModel):
    """The BAD_NO_FIT cases of a run in three groups, with counts."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    judge: str
    judge_prompt_version: str
    order: OrderMode
    n: int
    counts: dict[str, int]
    groups: dict[str, list[TriageRow]]


def label_of(outcome: PairOutcome) -> TriageLabel:
    """``x`` is the old answer, ``y`` the new one: new wins -> likely fixed, old wins -> likely worse; a tie,
    an order-inconsistent pair or one that could not be scored -> changed, unclear."""
    if outcome.winner == "y":
        return "likely fixed"
    if outcome.winner == "x":
        return "likely worse"
    return "changed, unclear"


async def _triage_one(
    judge: PairwiseJudge, case: Case, result: ResultRecord, order: OrderMode, seed: int | None
) -> TriageRow:
    assert result.answer is not None
    question = result.rewrite.query if result.rewrite else case.query
    old = PairwiseSide(answer=case.old_answer, contexts=list(case.retrieved))
    new = PairwiseSide(answer=result.answer.text, contexts=list(result.answer.contexts))
    rng = random.Random(f"{seed}:{case.id}") if seed is not None else None
    outcome = await judge_pair(judge, question, old, new, order, rng)
    winner = {"x": "old", "y": "new", "tie": "tie"}.get(outcome.winner) if outcome.winner else None
    return TriageRow(
        case_id=case.id,
        question=question,
        old_answer=case.old_answer,
        new_answer=result.answer.text,
        old_chunk_ids=[c.id for c in case.retrieved],
        new_chunk_ids=[c.id for c in result.answer.contexts],
        label=label_of(outcome),
        winner=winner,
        consistent=outcome.consistent,
        reason=" | ".join(j.reason for _, j in outcome.judgments if j.reason),
        tags=dict(case.tags),
    )


@dataclass
class TriageJob:
    """Triage as a job of the one runner: each BAD_NO_FIT case judged old vs new (nothing is stored)."""

    judge: PairwiseJudge
    cases: Mapping[str, Case]
    order: OrderMode
    seed: int | None
    rows: dict[int, TriageRow] = field(default_factory=dict)
    """The rows by position in the run's results, so the report keeps the run's order."""

    async def run_one(self, item: tuple[int, ResultRecord]) -> TriageRow:
        """Judge one case."""
        index, result = item
        row = await _triage_one(self.judge, self.cases[result.case_id], result, self.order, self.seed)
        self.rows[index] = row
        return row

    def count(self, progress: Progress, result: TriageRow) -> None:
        """Pairs the judge could not decide count as unscorable."""
        progress.unscorable += result.winner is None


async def triage_run(
    store: Store,
    run_ref: str,
    judge: PairwiseJudge,
    order: OrderMode = "both",
    seed: int | None = None,
    concurrency: int = 8,
    progress: ProgressCallback | None = None,
) -> TriageReport:
    """Judge old vs new for every BAD_NO_FIT case of run ``run_ref`` (id or prefix) and group them."""
    run = store.runs.get_run(run_ref)
    if run is None:
        raise RagreplayError(f"no run matches {run_ref!r}. Fix: pick an id from `ragreplay runs`.")
    results = [r for r in store.runs.load_results(run.id) if r.verdict == Verdict.BAD_NO_FIT and r.answer]
    cases = store.cases.get_cases([r.case_id for r in results])
    todo = [r for r in results if r.case_id in cases]
    job = TriageJob(judge, cases, order, seed)
    await run_job(
        job, JobPlan(todo=enumerate(todo), progress=Progress(total=len(todo))), concurrency, progress
    )
    rows = [job.rows[i] for i in range(len(todo))]
    groups: dict[str, list[TriageRow]] = {label: [r for r in rows if r.label == label] for label in LABELS}
    return TriageReport(
        run_id=run.id,
        judge=judge.name,
        judge_prompt_version=judge.prompt_version,
        order=order,
        n=len(rows),
        counts={label: len(group) for label, group in groups.items()},
        groups=groups,
    )
