"""The local pairwise judge: its signals, the 1-5 axes, swap symmetry and the shipped model (its fitting script:
tests/benchmarks/test_pairwise_local_benchmark.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from ragreplay.core.pairwise import AxisScores, PairwiseJudgment, PairwiseSide, swap_winner
from ragreplay.core.types import RetrievedChunk
from ragreplay.errors import ConfigError
from ragreplay.judges.local_pairwise import (
    DEFAULT_MODEL_PATH,
    LocalPairwiseJudge,
    PairwiseModel,
    axis_scores,
    load_model,
)
from ragreplay.judges.local_pairwise_signals import (
    SideSignals,
    question_copy,
    repeated_items,
    repeated_phrases,
    sentences,
    term_coverage,
    word_variety,
)
from ragreplay.judges.signals import answer_tokens

QUESTION = "How many vacation days do I get per year?"
OLD = RetrievedChunk(
    id="leave-2023#1",
    text="Employees receive 25 vacation days per calendar year. Part-time staff receive a pro-rated number of days.",
)
NEW = RetrievedChunk(
    id="leave-2025#1",
    text="From 1 January 2025 employees receive 27 vacation days per calendar year. Unused days expire after "
    "five years.",
)
DATES = {OLD.id: date(2023, 1, 1), NEW.id: date(2025, 1, 1)}
REFUSAL = "I'm sorry, I could not find any information about that."


@pytest.fixture(scope="module")
def judge() -> LocalPairwiseJudge:
    return LocalPairwiseJudge()


async def both_orders(
    judge: LocalPairwiseJudge, a: PairwiseSide, b: PairwiseSide, question: str = QUESTION
) -> tuple[PairwiseJudgment, PairwiseJudgment]:
    return await judge.judge(question, a, b), await judge.judge(question, b, a)


# ---------------------------------------------------------------- types


def test_axis_scores_stay_within_one_to_five_and_judgments_are_frozen() -> None:
    with pytest.raises(ValidationError):
        AxisScores(groundedness=0, completeness=3, directness=3, recency=3)
    with pytest.raises(ValidationError):
        AxisScores(groundedness=3, completeness=6, directness=3, recency=3)
    j = PairwiseJudgment(winner=None, scores_a=None, scores_b=None, reason="x", judge="j", prompt_version="v")
    with pytest.raises(ValidationError):
        j.winner = "A"  # type: ignore[misc]
    assert [swap_winner(w) for w in ("A", "B", "tie", None)] == ["B", "A", "tie", None]


# ---------------------------------------------------------------- text signals


def test_sentences_drop_list_markers_and_empty_pieces() -> None:
    assert sentences("1. Paris\n2. Lyon is big. It is old!\n- Nice\n\n...") == [
        "Paris",
        "Lyon is big.",
        "It is old!",
        "Nice",
    ]


def test_repetition_signals_catch_a_generation_loop_but_not_a_clean_list() -> None:
    loop = "1. The Grapes of Wrath\n2. The Grapes of Wrath\n3. The Grapes of Wrath\n4. Dune"
    clean = "1. The Great Gatsby\n2. Dune\n3. Beloved\n4. Emma"
    assert repeated_items(loop) == pytest.approx(0.5)
    assert repeated_items(clean) == 0.0
    assert repeated_phrases(answer_tokens("misfortune misfortune misfortune misfortune misfortune")) > 0.6
    assert word_variety(answer_tokens("misfortune " * 30)) < 0.1 < 0.9 < word_variety(answer_tokens(clean))


def test_question_copy_and_term_coverage() -> None:
    q = answer_tokens("Rewrite the sentence: if you have any questions please let me know")
    assert question_copy(answer_tokens("If you have any questions please let me know"), q) == 1.0
    assert question_copy(answer_tokens("Reach out with questions."), q) == 0.0
    # inflection and Dutch compounds count as addressed
    assert term_coverage("vacation policies", answer_tokens("Our vacation policy says ...")) == 1.0
    assert term_coverage("verlof opnemen", answer_tokens("Zwangerschapsverlof kun je opnemen")) == 1.0
    assert term_coverage("parking garage", answer_tokens("The canteen opens at eight")) == 0.0


# ---------------------------------------------------------------- axes and winners (real USE embedder)


async def test_grounded_answer_beats_an_ungrounded_one(judge: LocalPairwiseJudge) -> None:
    grounded = PairwiseSide(answer="You get 25 vacation days per calendar year.", contexts=[OLD])
    invented = PairwiseSide(answer="You can take unlimited paid leave whenever you like.", contexts=[OLD])
    ab, ba = await both_orders(judge, grounded, invented)
    assert ab.scores_a is not None and ab.scores_b is not None
    assert ab.scores_a.groundedness == 5 and ab.scores_b.groundedness <= 2
    assert ab.winner == "A" and ba.winner == "B"
    assert "support in its retrieved chunks" in ab.reason


async def test_a_number_the_chunks_do_not_state_is_not_grounded(judge: LocalPairwiseJudge) -> None:
    right = PairwiseSide(answer="You get 25 vacation days per calendar year.", contexts=[OLD])
    wrong = PairwiseSide(answer="You get 30 vacation days per calendar year.", contexts=[OLD])
    pair = await judge.judge(QUESTION, right, wrong)
    assert pair.scores_a is not None and pair.scores_b is not None
    assert (pair.scores_a.groundedness, pair.scores_b.groundedness) == (5, 1)
    assert pair.winner == "A"


async def test_an_answer_citing_the_newer_document_wins_on_recency(judge: LocalPairwiseJudge) -> None:
    newer = PairwiseSide(
        answer="You get 27 vacation days per calendar year.", contexts=[OLD, NEW], context_dates=DATES
    )
    older = PairwiseSide(
        answer="You get 25 vacation days per calendar year.", contexts=[OLD, NEW], context_dates=DATES
    )
    ab, ba = await both_orders(judge, newer, older)
    assert ab.scores_a is not None and ab.scores_b is not None
    assert (ab.scores_a.recency, ab.scores_b.recency) == (5, 1)
    assert (ab.scores_a.groundedness, ab.scores_b.groundedness) == (5, 5)
    assert ab.winner == "A" and ba.winner == "B"
    assert "recent documents" in ab.reason


async def test_recency_is_neutral_without_dates_and_grounding_neutral_without_chunks(
    judge: LocalPairwiseJudge,
) -> None:
    undated = PairwiseSide(answer="You get 25 vacation days per calendar year.", contexts=[OLD])
    bare = PairwiseSide(answer="You get 25 vacation days per calendar year.")
    pair = await judge.judge(QUESTION, undated, bare)
    assert pair.scores_a is not None and pair.scores_b is not None
    assert pair.scores_a.recency == pair.scores_b.recency == 3
    assert pair.scores_b.groundedness == 3


@pytest.mark.parametrize("contexts", [[], [OLD]], ids=["no chunks", "with chunks"])
async def test_a_direct_answer_beats_a_refusal(
    judge: LocalPairwiseJudge, contexts: list[RetrievedChunk]
) -> None:
    direct = PairwiseSide(answer="You get 25 vacation days per year.", contexts=contexts)
    refusal = PairwiseSide(answer=REFUSAL, contexts=contexts)
    ab, ba = await both_orders(judge, refusal, direct)
    assert ab.scores_a is not None and ab.scores_b is not None
    assert ab.scores_a.directness == 1 and ab.scores_b.directness >= 4
    assert ab.scores_a.completeness <= 2 < ab.scores_b.completeness
    assert ab.scores_a.groundedness == 3  # a refusal claims nothing to check
    assert ab.winner == "B" and ba.winner == "A"
    assert "declining to answer" in ab.reason


async def test_filler_and_hedging_cost_directness(judge: LocalPairwiseJudge) -> None:
    plain = PairwiseSide(answer="You get 25 vacation days per year.")
    chatty = PairwiseSide(answer="Sure, great question! You get 25 vacation days per year.")
    hedged = PairwiseSide(answer="I think you probably get 25 vacation days per year.")
    pair = await judge.judge(QUESTION, plain, chatty)
    hedge = await judge.judge(QUESTION, plain, hedged)
    assert pair.scores_a is not None and pair.scores_b is not None and hedge.scores_b is not None
    assert pair.scores_b.directness < pair.scores_a.directness
    assert hedge.scores_b.directness < pair.scores_a.directness
    raw = json.loads(pair.raw)
    assert raw["b"]["filler"] is True and json.loads(hedge.raw)["b"]["hedging"] is True


async def test_near_identical_answers_tie_and_empty_answers_score_lowest(judge: LocalPairwiseJudge) -> None:
    a = PairwiseSide(answer="You get 25 vacation days per year.")
    b = PairwiseSide(answer="You get 25 vacation days each year.")
    tie = await judge.judge(QUESTION, a, b)
    assert tie.winner == "tie" and "nearly the same" in tie.reason
    empty = await judge.judge(QUESTION, PairwiseSide(answer="   "), a)
    assert empty.scores_a == AxisScores(groundedness=3, completeness=1, directness=1, recency=3)
    assert empty.winner == "B"


async def test_the_same_verdict_in_both_orders_with_the_score_negated(judge: LocalPairwiseJudge) -> None:
    sides = [
        PairwiseSide(
            answer="You get 25 vacation days per calendar year.", contexts=[OLD, NEW], context_dates=DATES
        ),
        PairwiseSide(
            answer="You get 27 vacation days per calendar year.", contexts=[NEW], context_dates=DATES
        ),
        PairwiseSide(answer="Vacation is important. Vacation is important. Vacation is important."),
        PairwiseSide(answer="Je krijgt 25 vakantiedagen per kalenderjaar."),
        PairwiseSide(answer=REFUSAL, contexts=[OLD]),
        PairwiseSide(answer="How many vacation days do I get per year?"),
        PairwiseSide(answer=""),
    ]
    for i, a in enumerate(sides):
        for b in sides[i:]:
            ab, ba = await both_orders(judge, a, b)
            assert ab.winner == swap_winner(ba.winner)
            assert (ab.scores_a, ab.scores_b) == (ba.scores_b, ba.scores_a)
            assert json.loads(ab.raw)["score"] == -json.loads(ba.raw)["score"]


def _random_side(rng: random.Random) -> SideSignals:
    def share() -> float:
        return rng.random()

    return SideSignals(
        grounded=rng.choice([None, share()]),
        recency=rng.choice([None, share()]),
        first_relevance=share(),
        answer_relevance=share(),
        term_coverage=share(),
        refusal=rng.random() < 0.2,
        hedging=rng.random() < 0.2,
        filler=rng.random() < 0.2,
        question_copy=share(),
        repeated_items=share(),
        repeated_phrases=share(),
        word_variety=share(),
        substance=rng.choice([0.0, 0.3, 1.0]),
    )


def test_the_model_is_antisymmetric_by_construction_for_any_weights() -> None:
    rng = random.Random(7)
    names = SideSignals.feature_names()
    for _ in range(50):
        model = PairwiseModel(
            features=names,
            weights=tuple(rng.uniform(-4, 4) for _ in names),
            tie_base=rng.uniform(-3, 1),
            tie_similar=rng.uniform(0, 3),
            similar_from=0.85,
            settings={},
        )
        a, b, similarity = _random_side(rng), _random_side(rng), rng.uniform(0, 1)
        assert model.score(a, b) == -model.score(b, a)
        assert model.decide(model.score(a, b), similarity) == swap_winner(
            model.decide(model.score(b, a), similarity)
        )
    assert model.decide(0.0, 0.0) == "tie"


def test_axis_cut_points_are_the_documented_ones() -> None:
    model, _ = load_model()
    axes = model.settings["axes"]
    base = _random_side(random.Random(1))
    for grounded, expected in [
        (0.0, 1),
        (0.19, 1),
        (0.2, 2),
        (0.5, 3),
        (0.79, 4),
        (0.8, 5),
        (1.0, 5),
        (None, 3),
    ]:
        side = SideSignals(**{**base.__dict__, "grounded": grounded})
        assert axis_scores(side, axes).groundedness == expected


# ---------------------------------------------------------------- the shipped model and errors


def test_the_shipped_model_loads_and_names_its_version(judge: LocalPairwiseJudge) -> None:
    model, digest = load_model()
    assert set(model.features) == set(SideSignals.feature_names())
    assert judge.name == "local:pairwise"
    assert judge.prompt_version == f"local-pairwise-2.{digest}" and len(digest) == 8
    data = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    assert data["metrics"]["judge"]["accuracy"] >= 0.65  # fitted to the target on PandaLM (5-fold CV)
    # signs the fit may not reverse: more grounding / recency / substance helps, copying / refusing hurts
    w = dict(zip(model.features, model.weights, strict=True))
    assert w["grounded"] > 0 and w["recency"] > 0 and w["substance"] > 0
    assert w["refusal"] < 0 and w["question_copy"] <= 0 and w["repeated_items"] <= 0


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_a_malformed_model_file_is_a_config_error(tmp_path: Path) -> None:
    good = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    with pytest.raises(ConfigError, match="not found"):
        load_model(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_model(_write(tmp_path, "{oops"))
    with pytest.raises(ConfigError, match="format"):
        load_model(_write(tmp_path, {**good, "format": "other"}))
    with pytest.raises(ConfigError, match="unknown features"):
        load_model(_write(tmp_path, {**good, "weights": {**good["weights"], "vibes": 1.0}}))
    with pytest.raises(ConfigError, match="tie"):
        load_model(_write(tmp_path, {k: v for k, v in good.items() if k != "tie"}))


class _FakeEncoder:
    def __init__(self, name: str = "use", fail: bool = False) -> None:
        self.name = name
        self.fail = fail

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("encoder crashed")
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_an_embedder_the_model_was_not_fitted_with_is_refused() -> None:
    with pytest.raises(ConfigError, match="fitted with the 'use' embedder"):
        LocalPairwiseJudge(embedder=_FakeEncoder(name="e5"))


async def test_a_failure_while_measuring_gives_an_unscorable_judgment() -> None:
    judge = LocalPairwiseJudge(embedder=_FakeEncoder(fail=True))
    result = await judge.judge(QUESTION, PairwiseSide(answer="a b c"), PairwiseSide(answer="d e f"))
    assert result.winner is None and result.scores_a is None
    assert "encoder crashed" in result.reason
