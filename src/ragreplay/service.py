"""Application services shared by the CLI and the Python API: plan, run and summarise replays."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.core.summary import RunSummary, summarize
from ragreplay.core.types import Case
from ragreplay.engine import Progress, ProgressCallback, Replayer
from ragreplay.errors import RagreplayError
from ragreplay.ports import Judge, Target
from ragreplay.rewrite import Rewriter
from ragreplay.store import Store


def select_cases(
    store: Store,
    sources: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> list[Case]:
    """The cases a run replays: all ingested cases, or those of some sources / with some tag values."""
    source_ids = None
    if sources:
        source_ids = []
        for ref in sources:
            source = store.get_source(ref)
            if source is None:
                raise RagreplayError(
                    f"no ingested source matches {ref!r}. Fix: run `ragreplay ingest FILE` first, or pick an id "
                    "from `ragreplay sources`."
                )
            source_ids.append(source.id)
    cases = list(store.iter_cases(source_ids=source_ids, tags=tags))
    if limit is not None:
        cases = cases[:limit]
    if not cases:
        raise RagreplayError(
            "no labelled cases to replay. Fix: ingest a log with GOOD/BAD feedback (`ragreplay ingest FILE`), "
            "or loosen --source/--tag."
        )
    return cases


def new_run_id(now: datetime) -> str:
    """A sortable, unique run id such as ``run_20261129_184500_a1b2``."""
    return f"run_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}"


def plan_run(
    store: Store,
    cases: Sequence[Case],
    target: Target,
    judge: Judge,
    rewriter: Rewriter | None,
    selection: Mapping[str, Any],
    fresh: bool = False,
) -> tuple[RunRecord, bool]:
    """The run to execute: an unfinished run with the same config and dataset (resumed), or a new one."""
    config = {
        "target": {"name": target.name, "version": target.version},
        "judge": {"name": judge.name, "prompt_version": judge.prompt_version},
        "rewriter": {"name": rewriter.name, "prompt_version": rewriter.prompt_version} if rewriter else None,
    }
    config_hash = content_hash(config)
    dataset_hash = content_hash(sorted(c.id for c in cases))
    if not fresh:
        unfinished = store.find_unfinished_run(config_hash, dataset_hash)
        if unfinished is not None:
            store.set_run_status(unfinished.id, RunStatus.RUNNING)
            return unfinished, True
    now = datetime.now(UTC)
    run = RunRecord(
        id=new_run_id(now),
        created_at=now,
        status=RunStatus.RUNNING,
        target_name=target.name,
        target_version=target.version,
        judge_name=judge.name,
        judge_prompt_version=judge.prompt_version,
        rewriter_name=rewriter.name if rewriter else None,
        rewrite_prompt_version=rewriter.prompt_version if rewriter else None,
        config_hash=config_hash,
        dataset_hash=dataset_hash,
        n_cases=len(cases),
        config={**config, "selection": dict(selection)},
    )
    store.create_run(run, [c.id for c in cases])
    return run, False


async def execute_run(
    store: Store,
    run: RunRecord,
    cases: Sequence[Case],
    target: Target,
    judge: Judge,
    rewriter: Rewriter | None,
    concurrency: int,
    progress: ProgressCallback | None = None,
) -> Progress:
    """Replay the run's unfinished cases; on any interruption the run is marked interrupted, never half-done."""
    replayer = Replayer(store=store, target=target, judge=judge, rewriter=rewriter, concurrency=concurrency)
    try:
        return await replayer.run(run.id, cases, progress)
    except BaseException:
        store.set_run_status(run.id, RunStatus.INTERRUPTED)
        raise


def summarize_run(store: Store, run_ref: str) -> RunSummary:
    """The summary of a run given its id or a unique prefix of it."""
    run = store.get_run(run_ref)
    if run is None:
        raise RagreplayError(f"no run matches {run_ref!r}. Fix: pick an id from `ragreplay runs`.")
    results = store.load_results(run.id)
    cases = store.get_cases([r.case_id for r in results])
    sources = run.config.get("selection", {}).get("source_ids")
    return summarize(run, results, cases, store.skip_counts(sources))
