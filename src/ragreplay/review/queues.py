"""Building review queues: from a regression set version, from a replay run's BAD_NO_FIT cases, and the
calibration sample of judged shadow rows (stratified by tag and judge outcome, seeded)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ragreplay.core.regset import SetItem
from ragreplay.core.review import (
    HistoryTurn,
    HumanWinner,
    JudgeDecision,
    ReviewChunk,
    ReviewItem,
    ReviewSide,
    ReviewSource,
    Taxonomy,
)
from ragreplay.core.shadow import ShadowAnswer, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Case, RetrievedChunk, Verdict
from ragreplay.errors import RagreplayError
from ragreplay.judges.position import PairOutcome
from ragreplay.store import Store
from ragreplay.store.reviews import QueueRecord

DEFAULT_CALIBRATION_SIZE = 20
"""The requirement's weekly calibration sample."""

_WINNERS: dict[str, HumanWinner] = {"x": "champion", "y": "challenger", "tie": "tie"}


def _chunks(chunks: Sequence[RetrievedChunk]) -> list[ReviewChunk]:
    return [ReviewChunk(id=c.id, text=c.text) for c in chunks]


def _shadow_side(answer: ShadowAnswer) -> ReviewSide:
    return ReviewSide(answer=answer.text, chunks=_chunks(answer.chunks()))


def judge_decision(record: ShadowJudgmentRecord) -> JudgeDecision:
    """A stored shadow judgment in champion/challenger terms, keyed by the judge version it recorded; axis scores
    from the ordering that showed the champion first (else the first ordering judged)."""
    scores_champion: dict[str, int] = {}
    scores_challenger: dict[str, int] = {}
    outcome = record.payload.get("outcome")
    if outcome is not None:
        parsed = PairOutcome.model_validate(outcome)
        ordered = sorted(parsed.judgments, key=lambda oj: oj[0] != "xy")
        if ordered:
            ordering, judgment = ordered[0]
            a = judgment.scores_a.as_dict() if judgment.scores_a else {}
            b = judgment.scores_b.as_dict() if judgment.scores_b else {}
            scores_champion, scores_challenger = (a, b) if ordering == "xy" else (b, a)
    return JudgeDecision(
        judge=record.judge,
        prompt_version=record.judge_prompt_version,
        winner=None if record.winner is None or record.error else _WINNERS[record.winner],
        scores_champion=scores_champion,
        scores_challenger=scores_challenger,
        judge_version=record.payload.get("judge_version"),
    )


def shadow_item(
    row: ShadowRow, record: ShadowJudgmentRecord | None, source: ReviewSource, key: str | None = None
) -> ReviewItem:
    """A shadow row as a review item (its judgment kept aside)."""
    return ReviewItem(
        key=key or row.id,
        source=source,
        origin=f"shadow:{row.id}",
        challenger=row.challenger,
        question=row.query,
        tags=dict(row.tags),
        champion=_shadow_side(row.champion_answer),
        challenger_side=_shadow_side(row.challenger_answer),
        judge=None if record is None else judge_decision(record),
    )


def _recipe(taxonomy: Taxonomy, **more: Any) -> dict[str, Any]:
    return {"taxonomy": list(taxonomy.tags), "taxonomy_version": taxonomy.version, **more}


def regset_item(store: Store, item: SetItem) -> ReviewItem | None:
    """A contested or wound item of a regression set as a review item; ``None`` when no stored shadow row holds
    its two answers (a replayed case has only the champion's)."""
    c = item.candidate
    if c.source != "shadow":
        return None
    found = store.shadow_browse.shadow_row_with_judgment(c.source_id)
    if found is None:
        return None
    row, record = found
    source: ReviewSource = "regset-wound" if item.stratum == "wound" else "regset-contested"
    return shadow_item(row, record, source, key=item.key)


def build_regset_queue(store: Store, ref: str, taxonomy: Taxonomy, k: int = 1) -> QueueRecord:
    """A queue of the contested questions and open wounds of regression set ``ref`` (wounds first)."""
    record = store.regsets.get_set(ref)
    if record is None:
        raise RagreplayError(
            f"no regression set matches {ref!r}. Fix: pick one from `ragreplay regset list`."
        )
    items = [i for i in store.regsets.load_items(record.id) if i.stratum in ("wound", "contested")]
    items.sort(key=lambda i: (i.stratum != "wound", i.key))
    built = [r for r in (regset_item(store, i) for i in items) if r is not None]
    if not built:
        raise RagreplayError(
            f"regression set v{record.version} has no contested or wound item with both answers stored. "
            "Fix: build the set from shadow traffic, or review a run's BAD_NO_FIT cases (triage:RUN)."
        )
    recipe = _recipe(
        taxonomy, source=f"regset:{record.id}", version=record.version, without_pair=len(items) - len(built)
    )
    return store.reviews.create_queue("regset", built, k=k, recipe=recipe)


def case_item(case: Case, new_answer: str, new_chunks: Sequence[RetrievedChunk]) -> ReviewItem:
    """A BAD_NO_FIT case: the old answer (the user disliked it) as the champion, the replayed one as the
    challenger."""
    return ReviewItem(
        key=case.id,
        source="triage",
        origin=f"case:{case.id}",
        question=case.query,
        history=[HistoryTurn(role=m.role.value, content=m.content) for m in case.history],
        tags=dict(case.tags),
        champion=ReviewSide(answer=case.old_answer, chunks=_chunks(case.retrieved)),
        challenger_side=ReviewSide(answer=new_answer, chunks=_chunks(new_chunks)),
    )


def build_triage_queue(store: Store, run_ref: str, taxonomy: Taxonomy, k: int = 1) -> QueueRecord:
    """A queue of run ``run_ref``'s BAD_NO_FIT cases: old answer vs replayed answer."""
    run = store.runs.get_run(run_ref)
    if run is None:
        raise RagreplayError(f"no run matches {run_ref!r}. Fix: pick an id from `ragreplay runs`.")
    results = [r for r in store.runs.load_results(run.id) if r.verdict == Verdict.BAD_NO_FIT and r.answer]
    cases = store.cases.get_cases([r.case_id for r in results])
    built = [
        case_item(cases[r.case_id], r.answer.text, r.answer.contexts)
        for r in results
        if r.case_id in cases and r.answer is not None
    ]
    if not built:
        raise RagreplayError(f"run {run.id} has no BAD_NO_FIT case to review.")
    return store.reviews.create_queue(
        "triage", built, k=k, recipe=_recipe(taxonomy, source=f"triage:{run.id}")
    )


def stratum_of(row: ShadowRow, decision: JudgeDecision) -> tuple[str, str]:
    """The calibration stratum of a judged row: its tags (``k=v,...``, sorted) and the judge's outcome."""
    tags = ",".join(f"{k}={v}" for k, v in sorted(row.tags.items())) or "-"
    return tags, decision.winner or "unscored"


def calibration_sample(
    judged: Sequence[tuple[ShadowRow, ShadowJudgmentRecord]], n: int, seed: int
) -> list[ReviewItem]:
    """``n`` judged rows spread evenly over the strata (tags x judge outcome), uniformly within each, seeded:
    the strata are visited in a seeded random order, one pick each per round, until ``n`` or none is left.
    Rows the judge could not score are left out (there is nothing to calibrate)."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[ReviewItem]] = {}
    for row, record in judged:
        decision = judge_decision(record)
        if decision.winner is None:
            continue
        strata.setdefault(stratum_of(row, decision), []).append(shadow_item(row, record, "calibration"))
    for members in strata.values():
        rng.shuffle(members)
    order = sorted(strata)
    rng.shuffle(order)
    picked: list[ReviewItem] = []
    while len(picked) < n and any(strata[s] for s in order):
        for s in order:
            if strata[s] and len(picked) < n:
                picked.append(strata[s].pop())
    return picked


def build_calibration_queue(
    store: Store,
    since: datetime | None,
    taxonomy: Taxonomy,
    n: int = DEFAULT_CALIBRATION_SIZE,
    seed: int = 0,
    k: int = 1,
) -> QueueRecord:
    """The calibration sample of the shadow rows judged since ``since``, as a queue."""
    if n < 1:
        raise RagreplayError(f"a calibration sample needs at least one item, got {n}.")
    items = calibration_sample(store.shadow_judgments.load_shadow_judgments(since), n, seed)
    if not items:
        raise RagreplayError(
            "no judged shadow row to calibrate on in the window. Fix: run `ragreplay shadow judge`, or widen --since."
        )
    recipe = _recipe(
        taxonomy, source="calibration", since=None if since is None else since.isoformat(), n=n, seed=seed
    )
    return store.reviews.create_queue("calibration", items, k=k, recipe=recipe)
