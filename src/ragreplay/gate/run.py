"""Running a gate: plan it (or resume the unfinished one of the same configuration), run every item through the
one job runner, then evaluate the bars and store the verdict with the gate."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragreplay.compare.case_comparison import document_dates
from ragreplay.compare.comparison_run import load_targets
from ragreplay.core.gate import GatePolicy, GateVerdict, ItemOutcome, evaluate, graduated, stored_policy
from ragreplay.core.ids import content_hash
from ragreplay.core.regset import RegressionSetRecord, SetItem, Stratum
from ragreplay.core.runs import RunStatus
from ragreplay.core.sequential import SequentialPlan
from ragreplay.errors import ConfigError
from ragreplay.gate.draws import reserve
from ragreplay.gate.job import GateJob, GateSides
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import (
    LOCAL_PAIRWISE_SPECS,
    build_fit_judge,
    build_pairwise_judge,
    default_fit_judge,
)
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.gates import GateItemRecord, GateRecord

PlanCallback = Callable[[GateRecord, Sequence[SetItem], bool], None]
"""``on_plan(gate, todo, resumed)``: called once the gate is known, before any item runs; it may raise to
refuse (over budget), and the gate is then marked interrupted."""


@dataclass(frozen=True)
class GateReport:
    """A finished gate: its record, the set it ran on, the verdict and every item's outcome and payload."""

    gate: GateRecord
    regset: RegressionSetRecord
    verdict: GateVerdict
    policy: GatePolicy
    outcomes: list[ItemOutcome]
    payloads: dict[str, dict[str, Any]]
    local_judge: bool
    cost_usd: float
    unpriced_calls: int = 0
    """Model calls whose price is unknown, not in ``cost_usd`` (see ``core/costs``)."""


def gate_config(
    regset: RegressionSetRecord, sides: GateSides, judge_spec: str, fit_judge_spec: str
) -> dict[str, Any]:
    """Everything that decides a gate's item outcomes (the policy is not: it is applied afterwards)."""
    return {
        "set": {"id": regset.id, "version": regset.version},
        "champion": {"name": sides.champion.name, "version": sides.champion.version},
        "challenger": {"name": sides.challenger.name, "version": sides.challenger.version},
        "judge": {
            "spec": judge_spec,
            "name": sides.pairwise.name,
            "prompt_version": sides.pairwise.prompt_version,
        },
        "fit_judge": {
            "spec": fit_judge_spec,
            "name": sides.fit_judge.name,
            "prompt_version": sides.fit_judge.prompt_version,
        },
        "order": "both",
        "seed": sides.seed,
    }


def load_set(store: Store, ref: str) -> tuple[RegressionSetRecord, list[SetItem]]:
    """The set version ``ref`` (id, prefix, ``latest`` or ``vN``) and its items; :class:`ConfigError` if none."""
    record = store.regsets.get_set(ref)
    if record is None:
        raise ConfigError(
            f"--set {ref}: no such regression set in the store at {store.url}. "
            "Fix: build one with `ragreplay regset build`, or pick one from `ragreplay regset list`."
        )
    items = store.regsets.load_items(record.id)
    if not items:
        raise ConfigError(
            f"--set {ref}: regression set {record.id} has no items. Fix: rebuild it with more traffic."
        )
    return record, items


def plan_gate(
    store: Store, regset: RegressionSetRecord, config: dict[str, Any], n_items: int, fresh: bool
) -> tuple[GateRecord, bool]:
    """The unfinished gate of this configuration (resumed), or a new one."""
    digest = content_hash(config)
    if not fresh:
        found = store.gates.find_unfinished_gate(digest)
        if found is not None:
            store.gates.set_gate_status(found.id, RunStatus.RUNNING)
            return found, True
    now = datetime.now(UTC)
    record = GateRecord(
        id=f"gate_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}",
        created_at=now,
        status=RunStatus.RUNNING,
        set_id=regset.id,
        challenger=str(config["challenger"]["name"]),
        config=config,
        config_hash=digest,
        n_items=n_items,
    )
    store.gates.create_gate(record)
    return record, False


async def run_gate(
    *,
    store: Store,
    writer: StoreWriter,
    set_ref: str,
    sides: GateSides,
    judge_spec: str,
    fit_judge_spec: str,
    policy: GatePolicy,
    accept_local_judge: bool = False,
    concurrency: int = 8,
    fresh: bool = False,
    on_plan: PlanCallback | None = None,
    progress: ProgressCallback | None = None,
    until_decided: SequentialPlan | None = None,
) -> GateReport:
    """Gate ``sides.challenger`` against ``sides.champion`` on the set ``set_ref``: resumable, each item saved
    as it ends, the gate marked interrupted on any exception or Ctrl-C; returns the finished report.

    With ``until_decided`` every bar uses the plan's per-look confidence, and while the contested or wounds
    bar is inconclusive up to ``until_decided.step`` more questions of its stratum are drawn from the set's
    pool and judged, for at most ``max_looks`` looks or until the pool runs out."""
    regset, items = load_set(store, set_ref)
    config = gate_config(regset, sides, judge_spec, fit_judge_spec)
    record, resumed = plan_gate(store, regset, config, len(items), fresh)
    done = store.gates.gate_item_keys(record.id) if resumed else set()  # a new gate has saved nothing
    todo: Sequence[SetItem] = [i for i in items if i.key not in done]
    dates = {"champion": document_dates(sides.champion), "challenger": document_dates(sides.challenger)}
    job = GateJob(sides, writer, record.id, dates)
    try:
        if on_plan is not None:
            on_plan(record, todo, resumed)
        await run_job(
            job,
            JobPlan(todo=todo, progress=Progress(total=len(items), done=len(items) - len(todo))),
            concurrency,
            progress,
        )
        if until_decided is not None:
            policy = policy.model_copy(update={"confidence": until_decided.look_confidence})
            await _draw_until_decided(
                store, regset, record, job, policy, until_decided, concurrency, progress
            )
    except BaseException:
        with contextlib.suppress(Exception):  # never hide why the gate stopped
            store.gates.set_gate_status(record.id, RunStatus.INTERRUPTED)
        raise
    sequential = None if until_decided is None else until_decided.__dict__
    accepted = accept_local_judge or judge_spec not in LOCAL_PAIRWISE_SPECS
    # every item of a gate that saved none before went through this job: evaluate what it saved without
    # reading the items back (a resumed gate reads them all)
    saved = None if done else list(job.saved.values())
    return finish_gate(
        store, record.id, policy, accepted, sequential, items=saved, record=record, regset=regset
    )


async def _draw_until_decided(
    store: Store,
    regset: RegressionSetRecord,
    record: GateRecord,
    job: GateJob,
    policy: GatePolicy,
    plan: SequentialPlan,
    concurrency: int,
    progress: ProgressCallback | None,
) -> None:
    """Look again after each batch of drawn questions until the share bars decide (see :func:`run_gate`)."""
    pools: dict[Stratum, list[SetItem]] | None = None
    for _ in range(plan.max_looks - 1):
        outcomes = [
            ItemOutcome.model_validate(i.payload["outcome"]) for i in store.gates.load_gate_items(record.id)
        ]
        verdict = evaluate(outcomes, policy)
        open_bars = {b.name for b in verdict.bars if b.decision == "inconclusive"} & set(_STRATUM_OF)
        if verdict.decision == "error" or not open_bars:
            return
        if pools is None:
            pools = reserve(store, regset, {o.key for o in outcomes})
        batch = [item for bar in sorted(open_bars) for item in _take(pools, _STRATUM_OF[bar], plan.step)]
        if not batch:
            return
        await run_job(job, JobPlan(todo=batch, progress=Progress(total=len(batch))), concurrency, progress)


_STRATUM_OF: dict[str, Stratum] = {"contested": "contested", "wounds": "wound"}


def _take(pools: dict[Stratum, list[SetItem]], stratum: Stratum, n: int) -> list[SetItem]:
    taken = pools.get(stratum, [])[:n]
    pools[stratum] = pools.get(stratum, [])[n:]
    return taken


def finish_gate(
    store: Store,
    gate_id: str,
    policy: GatePolicy,
    judge_accepted: bool,
    sequential: Mapping[str, Any] | None = None,
    *,
    items: Sequence[GateItemRecord] | None = None,
    record: GateRecord | None = None,
    regset: RegressionSetRecord | None = None,
) -> GateReport:
    """Evaluate a gate's saved items under ``policy``, store the verdict, and return the report.

    ``items`` (every item the gate saved), ``record`` and ``regset``, when the caller holds them, are not read
    from the store again."""
    if record is None:
        record = store.gates.get_gate(gate_id)
    assert record is not None  # created above; gates are never deleted
    report = gate_report(store, record, policy, judge_accepted, items=items, regset=regset)
    verdict = {
        **report.verdict.model_dump(mode="json"),
        "policy": policy.model_dump(mode="json"),
        "local_judge": report.local_judge,
        "judge_accepted": judge_accepted,
        "sequential": dict(sequential) if sequential is not None else None,
    }
    store.gates.finish_gate(gate_id, report.verdict.decision, verdict)
    finished = store.gates.get_gate(gate_id)
    assert finished is not None
    return replace(report, gate=finished)


def gate_report(
    store: Store,
    record: GateRecord,
    policy: GatePolicy,
    judge_accepted: bool,
    *,
    items: Sequence[GateItemRecord] | None = None,
    regset: RegressionSetRecord | None = None,
) -> GateReport:
    """The report of a gate from its stored items (no call is made): re-rendering a stored gate uses this.
    ``items`` and ``regset``, when given, are the gate's items (all of them) and its set, already in hand."""
    if regset is None:
        regset = store.regsets.get_set(record.set_id)
    if regset is None:
        raise ConfigError(f"gate {record.id}: its regression set {record.set_id} is gone from the store")
    # items in hand are put in the store's order
    items = (
        store.gates.load_gate_items(record.id)
        if items is None
        else sorted(items, key=lambda i: (i.stratum, i.key))
    )
    outcomes = [ItemOutcome.model_validate(i.payload["outcome"]) for i in items]
    payloads = {i.key: i.payload for i in items}
    local = str(record.config.get("judge", {}).get("spec", "")) in LOCAL_PAIRWISE_SPECS
    verdict = evaluate(outcomes, policy, local_judge_accepted=judge_accepted or not local)
    cost = sum(float(p.get("cost_usd", 0.0)) for p in payloads.values())
    unpriced = sum(int(p.get("unpriced_calls", 0)) for p in payloads.values())
    return GateReport(record, regset, verdict, policy, outcomes, payloads, local, cost, unpriced)


def stored_report(store: Store, gate_ref: str) -> GateReport:
    """A stored gate re-rendered with the policy and judge acceptance it was decided with."""
    record = store.gates.get_gate(gate_ref)
    if record is None:
        raise ConfigError(f"no gate matches {gate_ref!r}. Fix: pick an id from `ragreplay gates`.")
    stored = record.verdict or {}
    policy = stored_policy(stored.get("policy", {}))
    return gate_report(store, record, policy, bool(stored.get("judge_accepted", False)))


def graduated_keys(
    store: Store, keys: Sequence[str], after: int, challenger: str | None = None
) -> frozenset[str]:
    """The keys among ``keys`` whose wound was fixed in each of its last ``after`` finished gates (of
    ``challenger`` when given): the regression set's next build counts them as wins."""
    history = store.gates.item_history(keys, challenger)
    return frozenset(
        key
        for key, entries in history.items()
        if graduated([ItemOutcome.model_validate(e["outcome"]) for e in entries if "outcome" in e], after)
    )


async def gate_target_files(
    *,
    store: Store,
    settings: Settings,
    set_ref: str,
    champion: Path,
    challenger: Path,
    judge_spec: str,
    fit_judge_spec: str | None = None,
    policy: GatePolicy | None = None,
    accept_local_judge: bool = False,
    fresh: bool = False,
    env: Mapping[str, str] | None = None,
    on_plan: PlanCallback | None = None,
    progress: ProgressCallback | None = None,
    until_decided: SequentialPlan | None = None,
) -> GateReport:
    """The whole gate from two target files: build the targets and judges (model calls cached in the store
    through the one writer), run the gate, close everything. The CLI, the Python API and the pytest plugin
    all gate through this."""
    champion_target, challengers = load_targets(champion, {"challenger": challenger})
    fit_spec = fit_judge_spec or default_fit_judge(judge_spec)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(
            settings.model_settings(), cache=writer, env=env if env is not None else os.environ
        )
        try:
            sides = GateSides(
                champion=champion_target,
                challenger=challengers["challenger"],
                pairwise=build_pairwise_judge(judge_spec, factory),
                fit_judge=build_fit_judge(fit_spec, factory),
            )
            return await run_gate(
                store=store,
                writer=writer,
                set_ref=set_ref,
                sides=sides,
                judge_spec=judge_spec,
                fit_judge_spec=fit_spec,
                policy=policy or GatePolicy(),
                accept_local_judge=accept_local_judge,
                concurrency=settings.concurrency,
                fresh=fresh,
                on_plan=on_plan,
                progress=progress,
                until_decided=until_decided,
            )
        finally:
            for target in (champion_target, *challengers.values()):
                await target.aclose()
            await factory.aclose()


def open_wound_keys(store: Store, keys: Sequence[str]) -> frozenset[str]:
    """The keys among ``keys`` whose wound the newest finished gate judging them left open (not fixed): the next
    regression set keeps them as wounds whatever the window's log says."""
    history = store.gates.item_history(keys)
    found = set()
    for key, entries in history.items():
        outcomes = [ItemOutcome.model_validate(e["outcome"]) for e in entries if "outcome" in e]
        if not outcomes or outcomes[-1].error is not None:
            continue
        last = outcomes[-1]
        if last.stratum == "wound" and last.fixed(GatePolicy().fixed_score) is False:
            found.add(key)
    return frozenset(found)
