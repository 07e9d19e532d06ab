"""Several workers, one replay run (``ragreplay run --workers``): each worker process claims the run's cases
that are not done from the store (:mod:`ragreplay.jobs.claims`, the queue ``replay:<run id>``) and replays
them with the one :class:`~ragreplay.replay.engine.Replayer`.

- The run is found or created under a lock (:meth:`~ragreplay.store.runs.RunsRepository.join_run`), so workers
  starting at once share one run; ``--run-id`` joins a named one.
- A result stored ``done`` is never overwritten (the jobs' writer is first-wins), so a case replayed twice (its
  worker's lease ran out while it was still at work) keeps its first result.
- A case that errors is *parked*: no worker claims it again in this attempt (a plain run tries an errored case
  once per command, too); the run's next attempt frees it.
- The worker that finds nothing left to claim and no other worker at work marks the run ``done`` (a conditional
  update: one worker does); a worker stopped (Ctrl-C, a failure) marks it ``interrupted`` only when no other
  worker holds a live claim. A worker killed outright marks nothing: the others take its cases over once its
  leases end, and the last of them marks the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragreplay.core.runs import ResultRecord, ResultStatus, RunStatus
from ragreplay.core.types import Case
from ragreplay.jobs.claims import DEFAULT_LEASE_S, ClaimFeed, StoreQueue
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.replay.engine import Replayer
from ragreplay.store import Store
from ragreplay.store.claim_queues import run_queue
from ragreplay.store.work_claims import ClaimBatch, WorkClaimsRepository

Item = tuple[Case, ResultRecord]


@dataclass(frozen=True)
class SharedReplay:
    """This process as one worker of several replaying the same run: cases are claimed from ``claims`` under
    leases of ``lease_s`` seconds, as ``worker``."""

    claims: WorkClaimsRepository
    worker: str
    lease_s: float = DEFAULT_LEASE_S


@dataclass
class SharedOutcome:
    """What one worker did: its own counts (``done``: the cases it finished, errors included), and whether it
    was the one that marked the run done."""

    progress: Progress
    marked_done: bool


def replay_feed(replayer: Replayer, store: Store, run_id: str, shared: SharedReplay) -> ClaimFeed[Item]:
    """The feed of the run's cases not done, claimed by ``shared.worker`` a batch of about the replayer's
    concurrency at a time, each with its stored result (where it stopped) and its pinned rewrite looked up;
    errored cases parked."""

    def claim(n: int, after: Any) -> ClaimBatch[Item]:
        batch = shared.claims.claim_run_results(shared.worker, run_id, n, shared.lease_s, after=after)
        found = store.cases.get_cases([r.case_id for r in batch.items])
        items = [(found[r.case_id], r) for r in batch.items if r.case_id in found]
        return ClaimBatch(replayer.with_pins(items), batch.after, batch.others_live)

    queue = StoreQueue(shared.claims, run_queue(run_id), shared.worker, claim, key=lambda item: item[0].id)
    return ClaimFeed(
        queue,
        batch=max(8, replayer.concurrency),
        lease_s=shared.lease_s,
        parks=lambda result: isinstance(result, ResultRecord) and result.status == ResultStatus.ERROR,
    )


async def replay_shared(
    replayer: Replayer,
    store: Store,
    run_id: str,
    shared: SharedReplay,
    progress: ProgressCallback | None = None,
) -> SharedOutcome:
    """Replay the cases of ``run_id`` this worker claims until none is left; mark the run done if this worker
    is the one that finds it finished, or interrupted if it stops while no other worker is at work."""
    counts = store.runs.result_counts(run_id)
    left = sum(n for status, n in counts.items() if status != ResultStatus.DONE)
    plan: JobPlan[Item] = JobPlan(
        todo=(), progress=Progress(total=left), feed=replay_feed(replayer, store, run_id, shared)
    )
    try:
        state = await run_job(replayer, plan, replayer.concurrency, progress)
    except BaseException:
        # this worker's claims are released (its failed cases parked) by now: the others may go on
        if not shared.claims.live_claims(run_queue(run_id)):
            store.runs.end_shared_run(run_id, RunStatus.INTERRUPTED)
        raise
    return SharedOutcome(state, store.runs.end_shared_run(run_id, RunStatus.DONE))
