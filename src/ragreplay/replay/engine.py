"""The async replay engine: rewrite, replay, judge every case of a run, saving each step as it completes.

Every step's outcome is saved before the next step starts, so a run killed at any point resumes where it stopped
without repeating a target call, and (with the model cache) without repeating a model call.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice

from ragreplay.core.chat import ProviderError
from ragreplay.core.costs import total_cost
from ragreplay.core.runs import ResultRecord, ResultStatus, RunStatus
from ragreplay.core.types import Case, Fit, Rewrite
from ragreplay.core.verdicts import verdict_for
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.ports import Judge, QueryRewriter, ResultWriter, RunStore, Target

_PAGE = 500
"""Cases read (and their pinned rewrites looked up) at a time, once the first pages are read."""
_FIRST_PAGE = 64
"""The first page's cases: a small one, so the first requests go out at once; pages double up to ``_PAGE``."""


@dataclass
class Replayer:
    """Replays the cases of one run through a target and judges each new answer."""

    store: RunStore
    writer: ResultWriter
    target: Target
    judge: Judge
    rewriter: QueryRewriter | None
    concurrency: int = 16
    _pinned: dict[str, Rewrite] = field(default_factory=dict)

    @property
    def _rewriter_key(self) -> str | None:
        """The rewriter version pins are kept under (``name@prompt_version``); ``None`` without a rewriter."""
        return None if self.rewriter is None else f"{self.rewriter.name}@{self.rewriter.prompt_version}"

    async def run(
        self, run_id: str, cases: Collection[Case], progress: ProgressCallback | None = None
    ) -> Progress:
        """Replay every case of ``run_id`` that is not done yet; return the final counts.

        Cases that errored in an earlier attempt are tried again; finished cases are never touched. ``cases``
        is iterated once, lazily (a :class:`~ragreplay.replay.selection.CaseSelection` streams from the store).
        """
        plan = self.plan(run_id, cases)
        state = await run_job(self, plan, self.concurrency, progress)
        self.store.runs.set_run_status(run_id, RunStatus.DONE, finished_at=datetime.now(UTC))
        return state

    def plan(self, run_id: str, cases: Collection[Case]) -> JobPlan[tuple[Case, ResultRecord]]:
        """The cases of ``run_id`` still to replay, each with where it stopped; finished ones counted.

        Only the ids of finished cases and the results of cases stopped half-way are held; the cases are
        read as the workers take them, with their pinned rewrites looked up a page at a time.
        """
        state = Progress(total=len(cases))
        done: set[str] = set()
        started: dict[str, ResultRecord] = {}
        for result in self.store.runs.iter_results(run_id, only_started=True):
            if result.status == ResultStatus.DONE:
                done.add(result.case_id)
                state.done += 1
                self.count(state, result)
            else:
                started[result.case_id] = result
        return JobPlan(todo=self._todo(run_id, cases, done, started), progress=state, read_ahead=True)

    def _todo(
        self, run_id: str, cases: Iterable[Case], done: set[str], started: dict[str, ResultRecord]
    ) -> Iterator[tuple[Case, ResultRecord]]:
        left = (c for c in cases if c.id not in done)
        size = _FIRST_PAGE
        while page := list(islice(left, size)):
            size = min(2 * size, _PAGE)
            todo = [(c, started.get(c.id) or ResultRecord(run_id=run_id, case_id=c.id)) for c in page]
            yield from self.with_pins(todo)

    def with_pins(self, todo: list[tuple[Case, ResultRecord]]) -> list[tuple[Case, ResultRecord]]:
        """A page of cases to replay, the rewrites pinned to its follow-ups looked up (one query), those still
        to be rewritten first (two calls, one after the other): the run's last calls are then single ones that
        end together, rather than rewrites whose judge calls go out last."""
        if self._rewriter_key is not None:
            follow_ups = [c.id for c, r in todo if c.history and r.rewrite is None]
            self._pinned.update(self.store.rewrites.get_rewrites(follow_ups, self._rewriter_key))
            todo.sort(key=lambda item: not self._to_rewrite(*item))
        return todo

    def _to_rewrite(self, case: Case, result: ResultRecord) -> bool:
        """Whether the case's replay starts with a rewriter call (a follow-up with no rewrite yet)."""
        return bool(case.history) and result.rewrite is None and case.id not in self._pinned

    async def run_one(self, item: tuple[Case, ResultRecord]) -> ResultRecord:
        """Replay one case from where it stopped (see :meth:`replay_case`)."""
        return await self.replay_case(*item)

    def count(self, progress: Progress, result: ResultRecord) -> None:
        """Count one case's errors, unscorable judgment and cost."""
        if result.status == ResultStatus.ERROR:
            progress.errors += 1
        if result.judgment and result.judgment.fit == Fit.UNSCORABLE:
            progress.unscorable += 1
        cost, unpriced = total_cost((result.rewrite, result.answer, result.judgment))
        progress.cost_usd += cost
        progress.unpriced_calls += unpriced

    async def _save(self, result: ResultRecord) -> ResultRecord:
        await self.writer.save_result(result)
        return result

    async def _fail(self, result: ResultRecord, step: str, exc: Exception) -> ResultRecord:
        message = f"{step}: {type(exc).__name__}: {exc}"
        return await self._save(result.updated(status=ResultStatus.ERROR, error=message))

    async def _rewrite(self, case: Case) -> Rewrite:
        """The standalone question this run's rewriter pinned to the case; rewritten and pinned on first use
        (a reply that could not be read is used for this run and not pinned)."""
        if not case.history:
            return Rewrite(original=case.query, query=case.query, rewritten=False, note="no history")
        pinned = self._pinned.pop(case.id, None)
        if pinned is not None:
            return pinned.model_copy(
                update={"cost_usd": 0.0, "unpriced_calls": 0}
            )  # paid by the run that pinned it
        if self.rewriter is None or self._rewriter_key is None:
            return Rewrite(original=case.query, query=case.query, rewritten=False, note="no rewriter")
        rewrite = await self.rewriter.rewrite(case)
        if rewrite.unreadable:  # this run only: the next run (or another rewriter) asks again
            return rewrite
        return await self.writer.pin_rewrite(case.id, rewrite, self._rewriter_key)

    async def replay_case(self, case: Case, result: ResultRecord) -> ResultRecord:
        """Take one case from wherever it stopped to DONE or ERROR, saving after each step."""
        if result.rewrite is None:
            try:
                rewrite = await self._rewrite(case)
            except ProviderError as exc:
                return await self._fail(result, "rewrite", exc)
            # Not saved on its own: the rewrite is pinned per case, and saved with the answer below.
            result = result.updated(rewrite=rewrite, error=None)
        assert result.rewrite is not None
        question = result.rewrite.query

        if result.answer is None or result.answer.error:
            answer = await self.target.answer(question, case)
            if answer.error:
                failed = result.updated(
                    answer=answer, status=ResultStatus.ERROR, error=f"target: {answer.error}"
                )
                return await self._save(failed)
            result = result.updated(answer=answer)
            await self.writer.save_result(result)
        assert result.answer is not None

        try:
            judgment = await self.judge.judge(case, question, result.answer)
        except ProviderError as exc:
            return await self._fail(result, "judge", exc)
        result = result.updated(
            judgment=judgment,
            verdict=verdict_for(case.feedback, judgment.fit),
            status=ResultStatus.DONE,
            error=None,
        )
        await self.writer.save_result(result)
        return result
