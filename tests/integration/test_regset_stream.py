"""The regression set's streamed read: the lean window reader gives the candidates the row-by-row reading gave,
the pool does not depend on the order candidates come in, and a streamed build equals the exact one where no
stratum is sampled (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from ragreplay.core.regset import Candidate, MultisetDigest, Pooler, pool
from ragreplay.judges.position import PairOutcome, side_scores
from ragreplay.regset.build import TokenHashEmbedder, build_regset
from ragreplay.regset.candidates import CandidateCounts, iter_shadow_candidates, judge_signal, outcome_scores
from ragreplay.store import Store
from regset_data import outcome, seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)


def _row_by_row(store: Store) -> list[Candidate]:
    """The candidates as the store's model-building readers give them (the reference)."""
    signals = {
        row.id: judge_signal(record) for row, record in store.shadow_judgments.iter_shadow_judgments(WEEK)
    }
    rows = [r for r in store.shadow_rows.iter_shadow_rows(since=WEEK) if r.ts < NOW]
    feedback = store.shadow_feedback.shadow_feedback_for(r.request_id for r in rows)
    return [
        Candidate(
            source="shadow",
            source_id=r.id,
            request_id=r.request_id,
            challenger=r.challenger,
            question=r.query,
            tags=dict(r.tags),
            champion_answer=r.champion_answer.text,
            champion_chunk_ids=list(r.champion_answer.chunk_ids),
            feedback=None if r.request_id not in feedback else feedback[r.request_id].feedback,
            **signals.get(r.id, {}),
        )
        for r in rows
        if r.champion_answer.error is None
    ]


def test_the_window_reader_gives_the_row_by_row_candidates(store: Store) -> None:
    seed_shadow(store, NOW)
    counts = CandidateCounts()
    streamed = list(iter_shadow_candidates(store, WEEK, NOW, counts))
    assert streamed == _row_by_row(store)
    assert counts.shadow_champion_failed == 1 and counts.shadow_rows == len(streamed) + 1
    assert counts.shadow_judged == len(streamed) and counts.shadow_with_feedback > 0


@pytest.mark.parametrize("seed", range(20))
def test_outcome_scores_equal_side_scores(seed: int) -> None:
    rng = random.Random(seed)
    judged: PairOutcome = outcome(
        rng.choice(["x", "y", "tie"]), rng.random() < 0.5, rng.randint(1, 5), rng.randint(1, 5)
    )
    if seed % 3 == 0:  # a one-order outcome
        judged = judged.model_copy(update={"judgments": judged.judgments[:1]})
    scores = side_scores(judged)
    assert outcome_scores(judged.model_dump(mode="json")) == (scores.x_mean, scores.x_min, scores.y_mean)


def test_the_pool_and_digest_do_not_depend_on_order(store: Store) -> None:
    seed_shadow(store, NOW)
    candidates = list(iter_shadow_candidates(store, WEEK, NOW, CandidateCounts()))
    candidates += [c.model_copy(update={"source_id": c.source_id + "-again"}) for c in candidates[::3]]
    expected = pool(candidates)
    digests = set()
    for seed in range(5):
        shuffled = candidates[:]
        random.Random(seed).shuffle(shuffled)
        pooler, digest = Pooler(), MultisetDigest()
        for c in shuffled:
            pooler.add(c)
            digest.add(c)
        assert pooler.pooled() == expected
        digests.add(digest.hexdigest())
    assert len(digests) == 1 and len(digests.pop()) == 32


def test_a_streamed_build_equals_the_exact_build_when_no_stratum_is_sampled(store: Store) -> None:
    seed_shadow(store, NOW)
    sizes = {"win": 5, "contested": 4, "wound": 3}
    kwargs = {"seed": 7, "sources": ("shadow",), "embed_with": TokenHashEmbedder()}
    streamed = build_regset(store, WEEK, NOW, sizes, design="two-phase", **kwargs)  # type: ignore[arg-type]
    exact = build_regset(store, WEEK, NOW, sizes, design="exact", **kwargs)  # type: ignore[arg-type]
    assert streamed.items == exact.items
    assert streamed.figures.read == exact.figures.read
    assert streamed.figures.candidates == exact.figures.candidates
