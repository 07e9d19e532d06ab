"""The demo's review loop: a calibration queue from the replay run (a seeded sample of its cases, spread over
the verdicts, each judged blind old vs new by the local pairwise judge), reviewed by simulated reviewers (the
ground truth, :mod:`ragreplay.demo.simulated_reviewers`) with some items reviewed by both, then calibrated like
any reviews: judge vs "human" agreement and reviewer vs reviewer."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragreplay.core.pairwise import PairwiseSide
from ragreplay.core.review import HumanWinner, JudgeDecision, ReviewItem, Taxonomy
from ragreplay.core.runs import ResultRecord
from ragreplay.core.types import Case
from ragreplay.demo.simulated_reviewers import (
    SIMULATED_REVIEWERS,
    assignments,
    item_truth,
    load_docs,
    load_truth,
    simulated_review,
)
from ragreplay.judges.position import PairOutcome, judge_pair
from ragreplay.ports import PairwiseJudge
from ragreplay.review.calibration import CalibrationReport, calibration_report
from ragreplay.review.queues import DEFAULT_CALIBRATION_SIZE, case_item
from ragreplay.store import Store
from ragreplay.store.reviews import QueueRecord, StoredReview

SAMPLE_SIZE = DEFAULT_CALIBRATION_SIZE
"""The requirement's weekly sample (20): the local pairwise judge embeds every answer and chunk, so a bigger
sample would slow the demo down."""
OVERLAP = 10
"""Items both simulated reviewers review: the fewest with which reviewer agreement is shown."""
_WINNERS: dict[str, HumanWinner] = {"x": "champion", "y": "challenger", "tie": "tie"}


def sample_results(results: Sequence[ResultRecord], n: int, seed: int) -> list[ResultRecord]:
    """``n`` results with an answer, spread evenly over the verdicts (one per verdict per round, the verdicts
    and the results within each in a seeded order), in the run's order."""
    rng = random.Random(seed)
    strata: dict[str, list[ResultRecord]] = {}
    for r in results:
        if r.answer is not None and r.answer.error is None:
            strata.setdefault(str(r.verdict or "UNSCORABLE"), []).append(r)
    for members in strata.values():
        rng.shuffle(members)
    order = sorted(strata)
    rng.shuffle(order)
    picked: list[ResultRecord] = []
    while len(picked) < n and any(strata.values()):
        for s in order:
            if strata[s] and len(picked) < n:
                picked.append(strata[s].pop())
    position = {r.case_id: i for i, r in enumerate(results)}
    return sorted(picked, key=lambda r: position[r.case_id])


def decision(outcome: PairOutcome, judge: PairwiseJudge) -> JudgeDecision:
    """A pair outcome (x the old answer, y the new one) as the judge's decision on the item, with the axis
    scores of the ordering that showed the old answer first."""
    scores: tuple[dict[str, int], dict[str, int]] = ({}, {})
    for ordering, j in sorted(outcome.judgments, key=lambda oj: oj[0] != "xy"):
        a = j.scores_a.as_dict() if j.scores_a else {}
        b = j.scores_b.as_dict() if j.scores_b else {}
        scores = (a, b) if ordering == "xy" else (b, a)
        break
    return JudgeDecision(
        judge=judge.name,
        prompt_version=judge.prompt_version,
        winner=None if outcome.winner is None else _WINNERS[outcome.winner],
        scores_champion=scores[0],
        scores_challenger=scores[1],
    )


async def judged_items(
    judge: PairwiseJudge, picked: Sequence[ResultRecord], cases: Mapping[str, Case]
) -> list[ReviewItem]:
    """Each picked case as a calibration item, the old answer as champion and the replayed one as challenger,
    with the pairwise judge's decision in both orders kept aside."""

    async def one(r: ResultRecord) -> ReviewItem:
        assert r.answer is not None
        case = cases[r.case_id]
        question = r.rewrite.query if r.rewrite else case.query
        old = PairwiseSide(answer=case.old_answer, contexts=list(case.retrieved))
        new = PairwiseSide(answer=r.answer.text, contexts=list(r.answer.contexts))
        outcome = await judge_pair(judge, question, old, new, "both")
        item = case_item(case, r.answer.text, r.answer.contexts)
        return item.model_copy(update={"source": "calibration", "judge": decision(outcome, judge)})

    return list(await asyncio.gather(*(one(r) for r in picked)))


@dataclass(frozen=True)
class SimulatedLoop:
    """What the demo's review loop did: the queue, the reviews per simulated reviewer, the items both reviewed,
    and the calibration of the judge against them."""

    queue: QueueRecord
    reviews: dict[str, int]
    shared: int
    report: CalibrationReport


def simulate_review_loop(
    store: Store,
    run_id: str,
    data: Path,
    judge: PairwiseJudge,
    taxonomy: Taxonomy,
    n: int = SAMPLE_SIZE,
    overlap: int = OVERLAP,
    seed: int = 0,
) -> SimulatedLoop:
    """Build the calibration queue of run ``run_id``, have the simulated reviewers review it (all their reviews
    in one transaction) and calibrate the judge on those reviews."""
    results = store.runs.load_results(run_id)
    cases = store.cases.get_cases([r.case_id for r in results])
    picked = sample_results([r for r in results if r.case_id in cases], n, seed)
    items = asyncio.run(judged_items(judge, picked, cases))
    recipe = {
        "taxonomy": list(taxonomy.tags),
        "taxonomy_version": taxonomy.version,
        "source": "calibration",
        "run": run_id,
        "n": n,
        "seed": seed,
        "simulated": True,
    }
    queue = store.reviews.create_queue("calibration", items, k=1, recipe=recipe)
    truth, docs = load_truth(data), load_docs(data)
    by_key = {i.key: i for i in items}
    known = {
        i.key: item_truth(i, truth[(cases[i.key].conversation_id, cases[i.key].turn_index)], docs)
        for i in items
    }
    plan = assignments([i.key for i in items], SIMULATED_REVIEWERS, min(overlap, len(items)), seed)
    store.reviews.save_reviews(
        [
            StoredReview(queue.id, simulated_review(by_key[k], known[k], who, seed, taxonomy.version))
            for k, who in plan
        ]
    )
    counts = {who: sum(1 for _, r in plan if r == who) for who in SIMULATED_REVIEWERS}
    return SimulatedLoop(queue, counts, min(overlap, len(items)), calibration_report(store))
