"""Several workers, one eval run (``ragreplay eval --workers``): each worker process reads the same dataset,
claims the run's rows not scored yet from the store (:mod:`ragreplay.jobs.claims`, the queue ``eval:<eval id>``)
and scores them with the one :class:`~ragreplay.evaluation.job.EvalJob`.

- The run is found or created under a lock keyed by its configuration hash
  (:meth:`~ragreplay.store.evals.EvalsRepository.join_eval`), so workers starting at once share one run; a
  placeholder row (:data:`PENDING`) is stored for every dataset row then, so what is left to score is in the
  store. ``eval_id`` joins a named run, and a worker whose dataset or options differ from that run's is refused.
- A row stored scored is never overwritten (first wins), so a row scored twice (its worker's lease ran out while
  it was still at work) keeps its first scores.
- A row that errors is *parked*: no worker claims it again in this attempt (a plain eval tries an errored row
  once per command, too); the run's next attempt frees it.
- The worker that finds nothing left to claim and no other worker at work summarises every stored row and
  marks the run done (a conditional update: one worker does); a worker stopped (Ctrl-C, a failure) marks it
  ``interrupted`` only when no other worker holds a live claim. A worker killed outright marks nothing: the
  others take its rows over once its leases end, and the last of them finishes the run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragreplay.core.eval import EvalRow, RowScores, summarize
from ragreplay.core.rubric import Rubric
from ragreplay.core.runs import RunStatus
from ragreplay.errors import ConfigError
from ragreplay.evaluation.identity import config_hash, metric_order, run_config
from ragreplay.evaluation.job import EvalJob, load_lexical_backends
from ragreplay.evaluation.target_rows import UNSCORED, EvalTarget
from ragreplay.jobs.claims import DEFAULT_LEASE_S, ClaimFeed, StoreQueue
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.shared_rate import StoreRateLimit
from ragreplay.jobs.writer import StoreWriter
from ragreplay.metrics.llm import PROMPT_VERSION
from ragreplay.providers.pricing import lookup_price
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.claim_queues import eval_queue
from ragreplay.store.evals import EvalRowRecord, EvalRunRecord
from ragreplay.store.work_claims import ClaimBatch, WorkClaimsRepository

PENDING = "not scored yet: a worker of this eval run scores it (or run the same command again)"
"""The error of a row's placeholder, stored when a shared eval run is created (see the module docstring)."""


@dataclass(frozen=True)
class SharedEval:
    """This process as one worker of several scoring the same eval run: rows are claimed from ``claims``
    under leases of ``lease_s`` seconds, as ``worker``."""

    claims: WorkClaimsRepository
    worker: str
    lease_s: float = DEFAULT_LEASE_S


@dataclass(frozen=True)
class EvalOptions:
    """What identifies an eval run besides its rows: the judge, rubric, repeats, target and rows per call."""

    judge_spec: str | None
    rubric: Rubric | None = None
    repeats: int = 1
    target: EvalTarget | None = None
    rows_per_call: int = 1

    def digest(self, rows: Sequence[EvalRow]) -> str:
        """The run's configuration hash over ``rows`` (as a one-process eval computes it)."""
        version = self.target.target.version if self.target else None
        per_call = self.rows_per_call if self.judge_spec else 1
        return config_hash(rows, self.judge_spec, self.rubric, self.repeats, version, per_call)

    def candidate(self, rows: Sequence[EvalRow], dataset: str) -> EvalRunRecord:
        """A new run record for ``rows`` (created only if no run of the same hash is found)."""
        judged = bool(self.judge_spec)
        now = datetime.now(UTC)
        return EvalRunRecord(
            id=f"eval_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}",
            created_at=now,
            status=RunStatus.RUNNING,
            dataset=dataset,
            judge=self.judge_spec or "",
            prompt_version=PROMPT_VERSION if judged else "",
            config=run_config(
                len(rows),
                self.rubric if judged else None,
                self.repeats if judged else 1,
                self.target.describe() if self.target else None,
                self.rows_per_call if judged else 1,
            ),
            config_hash=self.digest(rows),
            n_rows=len(rows),
        )


@dataclass
class SharedEvalOutcome:
    """What one worker did: its own counts (``done``: the rows it scored, errors included), whether it was the
    one that marked the run done, and the run's rows and summary as the store has them at the end."""

    progress: Progress
    marked_done: bool
    record: EvalRunRecord
    rows: tuple[RowScores, ...]


def placeholders(eval_id: str, rows: Sequence[EvalRow]) -> list[EvalRowRecord]:
    """A :data:`PENDING` row for each of ``rows``, in dataset order."""
    return [
        EvalRowRecord(
            eval_id=eval_id,
            row_id=row.id,
            position=i,
            error=True,
            payload=RowScores(row_id=row.id, tags=row.tags, question=row.question, error=PENDING).model_dump(
                mode="json"
            ),
        )
        for i, row in enumerate(rows)
    ]


def join_shared_eval(
    store: Store,
    rows: Sequence[EvalRow],
    dataset: str,
    options: EvalOptions,
    fresh: bool = False,
    eval_id: str | None = None,
) -> tuple[EvalRunRecord, bool]:
    """The run the workers share, found or created under the lock with a placeholder for every row, and
    whether it existed. :class:`ConfigError` when ``eval_id`` names a run whose rows or options differ from
    ``rows`` and ``options`` (each worker must read the same dataset with the same options)."""
    candidate = options.candidate(rows, dataset)
    record, existed = store.evals.join_eval(candidate, placeholders(candidate.id, rows), fresh, eval_id)
    if record.config_hash != candidate.config_hash:
        raise ConfigError(
            f"{dataset}: its rows or the options (judge, rubric, repeats, target, rows per call) differ from "
            f"those of eval run {record.id} ({record.n_rows} rows of {record.dataset}). Fix: give every worker "
            "the same dataset file and options, or leave --eval-id out to start a run of this file"
        )
    return record, existed


def eval_feed(job: EvalJob, rows: Mapping[str, EvalRow], shared: SharedEval) -> ClaimFeed[EvalRow]:
    """The feed of the run's rows not scored, claimed by ``shared.worker`` in batches of the rows the job keeps
    in flight (at least ``rows_per_call``); an answer the target gave before (saved with the row) is handed to
    the job, so the target is not asked again; errored rows parked."""

    def claim(n: int, after: Any) -> ClaimBatch[EvalRow]:
        batch = shared.claims.claim_eval_rows(shared.worker, job.eval_id, n, shared.lease_s, after=after)
        items = []
        for record in batch.items:
            row = rows.get(record.row_id)
            if row is None:  # not in this worker's dataset: refused at the start, never here
                continue
            saved = RowScores.model_validate(record.payload)
            answer = saved.target_answer
            if saved.error == UNSCORED and answer is not None and answer.error is None:
                job.answers[row.id] = answer
            items.append(row)
        return ClaimBatch(items, batch.after, batch.others_live)

    queue = StoreQueue(shared.claims, eval_queue(job.eval_id), shared.worker, claim, key=lambda row: row.id)
    return ClaimFeed(
        queue,
        batch=max(8, job.workers, job.rows_per_call),
        lease_s=shared.lease_s,
        parks=lambda result: isinstance(result, RowScores) and result.error is not None,
    )


async def evaluate_shared(
    job: EvalJob,
    store: Store,
    record: EvalRunRecord,
    rows: Sequence[EvalRow],
    shared: SharedEval,
    progress: ProgressCallback | None = None,
) -> SharedEvalOutcome:
    """Score the rows of ``record`` this worker claims until none is left; summarise every stored row and mark
    the run done if this worker is the one that finds it finished, or interrupted if it stops while no other
    worker is at work."""
    by_id = {row.id: row for row in rows}
    plan: JobPlan[EvalRow] = JobPlan(
        todo=(),
        progress=Progress(total=store.evals.unscored(record.id)),
        feed=eval_feed(job, by_id, shared),
    )
    try:
        await load_lexical_backends(rows)
        state = await run_job(job, plan, job.workers, progress)
    except BaseException:
        # this worker's claims are released (its errored rows parked) by now: the others may go on
        if not shared.claims.live_claims(eval_queue(record.id)):
            store.evals.end_shared_eval(record.id, RunStatus.INTERRUPTED)
        raise
    scored = tuple(RowScores.model_validate(r.payload) for r in store.evals.load_eval_rows(record.id))
    summary = summarize(scored, metric_order(record))
    marked = store.evals.end_shared_eval(record.id, RunStatus.DONE, summary.model_dump(mode="json"))
    finished = store.evals.get_eval(record.id) or record
    return SharedEvalOutcome(state, marked, finished, scored)


async def evaluate_worker(
    store: Store,
    settings: Settings,
    rows: Sequence[EvalRow],
    dataset: str,
    options: EvalOptions,
    shared: SharedEval,
    fresh: bool = False,
    eval_id: str | None = None,
    env: Mapping[str, str] | None = None,
    on_plan: Callable[[EvalRunRecord, bool], None] | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[EvalRunRecord, SharedEvalOutcome | None]:
    """This process as one worker of a shared eval run: the run joined (or created) under the lock, its rows
    claimed and scored with the judge built from ``options.judge_spec``, the providers' request rates shared
    through the store. Returns the run and what this worker did (``None``: the run was finished already).
    Closes everything it opened and the target."""
    rate = StoreRateLimit(store.work_claims)
    try:
        async with StoreWriter(store) as writer:
            factory = ModelFactory(
                settings.model_settings(),
                cache=writer,
                env=env if env is not None else os.environ,
                shared_rate=rate,
            )
            try:
                record, existed = join_shared_eval(store, rows, dataset, options, fresh, eval_id)
                if on_plan is not None:
                    on_plan(record, existed)
                if record.status == RunStatus.DONE:
                    return record, None
                spec = options.judge_spec
                job = EvalJob(
                    record.id,
                    factory.build(spec) if spec else None,
                    writer,
                    {row.id: i for i, row in enumerate(rows)},
                    options.rubric,
                    options.repeats,
                    options.target,
                    {},
                    spec is None or lookup_price(spec, factory.prices) is not None,
                    settings.concurrency,
                    options.rows_per_call,
                )
                return record, await evaluate_shared(job, store, record, rows, shared, progress)
            finally:
                if options.target is not None:
                    await options.target.target.aclose()
                await factory.aclose()
    finally:
        rate.close()
