"""Application services shared by the CLI and the Python API: plan, run and summarise replays."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.run_summary import RunSummary, SummaryBuilder
from ragreplay.core.runs import ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.jobs.runner import Progress, ProgressCallback
from ragreplay.jobs.shared_rate import StoreRateLimit
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_fit_judge
from ragreplay.ports import Judge, QueryRewriter, ResultWriter, Target
from ragreplay.providers.registry import ModelFactory
from ragreplay.replay.engine import Replayer
from ragreplay.replay.rewrite import ConcatRewriter, LocalRewriter, Rewriter
from ragreplay.replay.selection import CaseSelection, case_ids
from ragreplay.replay.shared import SharedOutcome, SharedReplay, replay_shared
from ragreplay.settings import Settings
from ragreplay.store import Store


def select_cases(
    store: Store,
    sources: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> list[Case]:
    """The cases a run replays, all in a list (see :func:`case_selection`, which a run streams)."""
    return list(case_selection(store, sources, tags, limit))


def case_selection(
    store: Store,
    sources: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> CaseSelection:
    """The cases a run replays: all ingested cases, or those of some sources / with some tag values, read
    lazily (only their ids are read here)."""
    source_ids = None
    if sources:
        source_ids = []
        for ref in sources:
            source = store.cases.get_source(ref)
            if source is None:
                raise RagreplayError(
                    f"no ingested source matches {ref!r}. Fix: run `ragreplay ingest FILE` first, or pick an id "
                    "from `ragreplay sources`."
                )
            source_ids.append(source.id)
    cases = CaseSelection(store.cases, source_ids, tags, limit)
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
    cases: Collection[Case],
    target: Target,
    judge: Judge,
    rewriter: QueryRewriter | None,
    selection: Mapping[str, Any],
    fresh: bool = False,
    shared: bool = False,
    run_id: str | None = None,
) -> tuple[RunRecord, bool]:
    """The run to execute, and whether it is an earlier one: the newest run with the same config and dataset
    (an unfinished one, or a finished one with errored cases, is set ``running`` to be resumed; a finished one
    with every case done comes back ``done``: nothing to replay), or, with ``fresh`` or none found, a new one.

    ``shared`` (one of several workers): found or created under a lock, a run already ``running`` joined as
    it is (:meth:`~ragreplay.store.runs.RunsRepository.join_run`); ``run_id`` joins that run, which must
    have been made with the same target, judge and rewriter (``cases`` is then not read)."""
    config = {
        "target": {"name": target.name, "version": target.version},
        "judge": {"name": judge.name, "prompt_version": judge.prompt_version},
        "rewriter": {"name": rewriter.name, "prompt_version": rewriter.prompt_version} if rewriter else None,
    }
    config_hash = content_hash(config)
    if run_id is not None:
        _check_joined(store, run_id, config_hash, config)
    ids = [] if run_id is not None else case_ids(cases)
    dataset_hash = content_hash(sorted(ids))
    if not fresh and not shared and run_id is None:
        found = store.runs.find_latest_run(config_hash, dataset_hash)
        if found is not None:
            if found.status == RunStatus.DONE and not _cases_left(store, found.id):
                return found, True
            store.runs.set_run_status(found.id, RunStatus.RUNNING)
            return found.model_copy(update={"status": RunStatus.RUNNING, "finished_at": None}), True
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
    if shared or run_id is not None:
        return store.runs.join_run(run, ids, fresh=fresh, run_id=run_id)
    store.runs.create_run(run, ids)
    return run, False


def _check_joined(store: Store, run_id: str, config_hash: str, config: Mapping[str, Any]) -> None:
    """Refuse to join run ``run_id`` (missing, or made with another target, judge or rewriter)."""
    run = store.runs.get_run(run_id)
    if run is None or run.id != run_id:
        raise ConfigError(f"--run-id {run_id}: no such run. Fix: pick a full id from `ragreplay runs`.")
    if run.config_hash != config_hash:
        theirs = {key: run.config.get(key) for key in config}
        raise ConfigError(
            f"--run-id {run_id}: that run was made with {theirs}, this command has {dict(config)}. Fix: join it "
            "with the same --target, --judge and --rewriter as the run (a changed target needs a version of "
            "its own run)."
        )


def _cases_left(store: Store, run_id: str) -> int:
    """How many of a run's cases are pending or errored (what resuming it would replay)."""
    counts = store.runs.result_counts(run_id)
    return counts.get(ResultStatus.PENDING, 0) + counts.get(ResultStatus.ERROR, 0)


async def execute_run(
    store: Store,
    writer: ResultWriter,
    run: RunRecord,
    cases: Collection[Case],
    target: Target,
    judge: Judge,
    rewriter: QueryRewriter | None,
    concurrency: int,
    progress: ProgressCallback | None = None,
) -> Progress:
    """Replay the run's unfinished cases; on any interruption the run is marked interrupted, never half-done."""
    replayer = Replayer(
        store=store, writer=writer, target=target, judge=judge, rewriter=rewriter, concurrency=concurrency
    )
    try:
        return await replayer.run(run.id, cases, progress)
    except BaseException:
        store.runs.set_run_status(run.id, RunStatus.INTERRUPTED)
        raise


def summarize_run(store: Store, run_ref: str, keep: int | None = None) -> RunSummary:
    """The summary of a run given its id or a unique prefix of it, computed as its results stream by (a page
    of cases at a time); with ``keep``, it lists only the first ``keep`` cases of each kind a terminal shows."""
    run = store.runs.get_run(run_ref)
    if run is None:
        raise RagreplayError(f"no run matches {run_ref!r}. Fix: pick an id from `ragreplay runs`.")
    builder = SummaryBuilder(keep)
    results = store.runs.iter_results(run.id)
    while page := list(islice(results, _SUMMARY_PAGE)):
        cases = store.cases.get_cases([r.case_id for r in page])
        for result in page:
            builder.add(result, cases.get(result.case_id))
    sources = run.config.get("selection", {}).get("source_ids")
    return builder.build(run, store.cases.skip_counts(sources))


_SUMMARY_PAGE = 1000


PlanCallback = Callable[[RunRecord, bool], None]


def build_rewriter(spec: str | None, factory: ModelFactory) -> QueryRewriter | None:
    """The follow-up rewriter for ``spec``: ``none``, ``local`` (rule-based: pronouns resolved), ``local:concat``
    (earlier questions prepended to every detected follow-up) or a ``provider:model`` LLM."""
    if spec is None or spec == "none":
        return None
    if spec == "local:concat":
        return ConcatRewriter()
    if spec in ("local", "local:referent", "local:fit"):
        return LocalRewriter()
    return Rewriter(factory.build(spec))


async def replay(
    store: Store,
    settings: Settings,
    target: Target,
    cases: Collection[Case],
    selection: Mapping[str, Any],
    env: Mapping[str, str],
    fresh: bool = False,
    progress: ProgressCallback | None = None,
    on_plan: PlanCallback | None = None,
) -> RunRecord:
    """The whole replay job: build the judge and rewriter, plan (or resume) the run, execute it, clean up.

    ``on_plan(run, resumed)`` is called once the run is known, before any case is replayed. A finished run of
    the same configuration and cases with every case done is returned as it is (status ``done``), without a
    call to the target or a model; ``fresh`` starts a new run instead.
    """
    if not settings.judge:
        raise ConfigError(
            "no judge configured. Fix: pass --judge provider:model (e.g. --judge openai:gpt-4.1-mini, or "
            "--judge fake:default for the shipped deterministic fake), set RAGREPLAY_JUDGE, or `judge:` in "
            "ragreplay.yaml."
        )
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=env)
        try:
            judge = build_fit_judge(settings.judge, factory)
            rewriter = build_rewriter(settings.rewriter_spec, factory)
            run, resumed = plan_run(store, cases, target, judge, rewriter, selection, fresh=fresh)
            if on_plan:
                on_plan(run, resumed)
            if run.status == RunStatus.DONE:
                return run
            await execute_run(
                store, writer, run, cases, target, judge, rewriter, settings.concurrency, progress
            )
            return run
        finally:
            await target.aclose()
            await factory.aclose()


async def plan_shared_run(
    store: Store,
    settings: Settings,
    target: Target,
    cases: Collection[Case],
    selection: Mapping[str, Any],
    env: Mapping[str, str],
    fresh: bool = False,
) -> tuple[RunRecord, bool]:
    """The run several workers will share, found or created under the lock (see :func:`plan_run`), without
    replaying anything: ``ragreplay run --workers N`` plans it once, then its workers join it by id."""
    _require_judge(settings)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=env)
        try:
            judge = build_fit_judge(settings.judge or "", factory)
            rewriter = build_rewriter(settings.rewriter_spec, factory)
            return plan_run(store, cases, target, judge, rewriter, selection, fresh=fresh, shared=True)
        finally:
            await target.aclose()
            await factory.aclose()


def _require_judge(settings: Settings) -> None:
    if not settings.judge:
        raise ConfigError(
            "no judge configured. Fix: pass --judge provider:model (e.g. --judge openai:gpt-4.1-mini, or "
            "--judge fake:default for the shipped deterministic fake), set RAGREPLAY_JUDGE, or `judge:` in "
            "ragreplay.yaml."
        )


async def replay_worker(
    store: Store,
    settings: Settings,
    target: Target,
    cases: Collection[Case],
    selection: Mapping[str, Any],
    env: Mapping[str, str],
    shared: SharedReplay,
    fresh: bool = False,
    run_id: str | None = None,
    progress: ProgressCallback | None = None,
    on_plan: PlanCallback | None = None,
) -> tuple[RunRecord, SharedOutcome | None]:
    """:func:`replay` as one of several worker processes of one run (``ragreplay run --workers``,
    :mod:`ragreplay.replay.shared`): the run is found or created under a lock (``run_id``: that run joined;
    ``cases`` then unread), its cases claimed from the store, the providers' request rates shared through it.
    Returns the run and what this worker did (``None`` when the run was finished already)."""
    _require_judge(settings)
    rate = StoreRateLimit(store.work_claims)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=env, shared_rate=rate)
        try:
            judge = build_fit_judge(settings.judge or "", factory)
            rewriter = build_rewriter(settings.rewriter_spec, factory)
            run, resumed = plan_run(
                store, cases, target, judge, rewriter, selection, fresh=fresh, shared=True, run_id=run_id
            )
            if on_plan:
                on_plan(run, resumed)
            if run.status == RunStatus.DONE:
                return run, None
            replayer = Replayer(
                store=store,
                writer=writer,
                target=target,
                judge=judge,
                rewriter=rewriter,
                concurrency=settings.concurrency,
            )
            return run, await replay_shared(replayer, store, run.id, shared, progress)
        finally:
            await target.aclose()
            await factory.aclose()
            rate.close()
