"""Names and markers of the work-claim queues (:mod:`ragreplay.store.work_claims`), shared by the repositories
that start and end the jobs those queues feed."""

from __future__ import annotations

PARKED_UNTIL = 1e15
"""The lease end of a *parked* claim: an item a worker tried and recorded as failed in this attempt of the job
(a replayed case that errored). It is held by nobody alive (``PARKED_WORKER``, never renewed, never expired), so
no worker claims it again until the job's next attempt frees it; workers do not wait for it to end."""
PARKED_WORKER = "parked"


def run_queue(run_id: str) -> str:
    """The queue of the cases of replay run ``run_id`` that are not done (``ragreplay run --workers``)."""
    return f"replay:{run_id}"


def eval_queue(eval_id: str) -> str:
    """The queue of the rows of eval run ``eval_id`` not scored yet (``ragreplay eval --workers``)."""
    return f"eval:{eval_id}"
