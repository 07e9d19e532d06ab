"""The local pairwise judge with a reference answer (issue 14, part 2): closeness to a reviewed or gold answer
moves the verdict, weak signals give a tie, and the reference reaches the judge from the gate's items; the LLM
pairwise judge shows it in its prompt."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragreplay.core.pairwise import PairwiseJudgment, PairwiseSide
from ragreplay.core.regset import Candidate, SetItem
from ragreplay.core.types import Answer, Case, Fit, Judgment
from ragreplay.gate.job import GateSides, judge_item
from ragreplay.judges.local_pairwise import LocalPairwiseJudge, PairwiseModel, load_model
from ragreplay.judges.local_pairwise_signals import SideSignals, length, names, token_fscore
from ragreplay.judges.position import judge_pair
from ragreplay.judges.signals import token_f1_multilingual

QUESTION = "How many vacation days do full-time employees get per year?"
REFERENCE = (
    "Full-time employees get 25 vacation days per calendar year; part-time staff get a pro-rated number."
)
RIGHT = "Full-time employees receive 25 vacation days each calendar year."
WRONG = "Full-time employees receive 30 vacation days each calendar year."


@pytest.fixture(scope="module")
def judge() -> LocalPairwiseJudge:
    return LocalPairwiseJudge()


async def test_the_reference_moves_the_verdict_to_the_side_closer_to_it(judge: LocalPairwiseJudge) -> None:
    right, wrong = PairwiseSide(answer=RIGHT), PairwiseSide(answer=WRONG)
    # without chunks or a reference, "25 days" and "30 days" are near-identical answers: a tie
    assert (await judge.judge(QUESTION, right, wrong)).winner == "tie"
    ab = await judge.judge(QUESTION, right, wrong, reference=REFERENCE)
    ba = await judge.judge(QUESTION, wrong, right, reference=REFERENCE)
    assert (ab.winner, ba.winner) == ("A", "B")
    assert "reference" in ab.reason
    raw = json.loads(ab.raw)
    assert raw["reference"] is True and raw["a"]["ref_fscore"] > raw["b"]["ref_fscore"]


async def test_the_reference_outweighs_style_signals(judge: LocalPairwiseJudge) -> None:
    # A longer, fluent answer that misses the reference's facts, against a short one that states them
    vague = PairwiseSide(
        answer="Vacation entitlement depends on your contract, your role and local regulations, so please "
        "check with your manager or the HR portal for the details that apply to you."
    )
    short = PairwiseSide(
        answer="You get 25 vacation days per calendar year, pro-rated if you work part-time."
    )
    with_ref = await judge.judge(QUESTION, vague, short, reference=REFERENCE)
    assert with_ref.winner == "B"
    assert (await judge.judge(QUESTION, short, vague, reference=REFERENCE)).winner == "A"


async def test_weak_signals_give_a_tie(judge: LocalPairwiseJudge) -> None:
    # two answers as close to the reference as each other: no side is clearly better
    a = PairwiseSide(answer="Full-time employees get 25 vacation days per calendar year.")
    b = PairwiseSide(answer="Per calendar year, full-time employees get 25 vacation days.")
    judgment = await judge.judge(QUESTION, a, b, reference=REFERENCE)
    assert judgment.winner == "tie" and judgment.reason.startswith("tie")


def test_the_tie_band_is_calibrated_separately_with_a_reference() -> None:
    model, _ = load_model()
    assert model.tie_reference is not None and "ref_fscore" in model.reference_features
    # calibrated on RAGChecker (0 there: ties with a reference come from the similarity cut)
    assert model.band_reference is not None and model.band_reference >= 0.0
    band = 0.3
    model = PairwiseModel(**{**model.__dict__, "band_reference": band})
    assert model.tie_band(referenced=True) == band and model.tie_band(referenced=False) == model.band
    # inside the band the signals are weak: a tie, whichever side leans
    assert model.decide(0.5 * band, 0.0, referenced=True) == "tie"
    assert model.decide(-0.5 * band, 0.0, referenced=True) == "tie"
    without_band = PairwiseModel(**{**model.__dict__, "band_reference": 0.0})
    assert without_band.decide(0.5 * band, 0.0, referenced=True) == "A"  # the ordinal band alone decides
    strong = 2.0 * model.tie_width(0.0, referenced=True) + band
    assert model.decide(strong, 0.0, referenced=True) == "A"
    assert model.decide(-strong, 0.0, referenced=True) == "B"


def test_without_a_reference_the_reference_features_drop_out(judge: LocalPairwiseJudge) -> None:
    pair = judge.signals(QUESTION, PairwiseSide(answer=RIGHT), PairwiseSide(answer=WRONG))
    assert pair.a.ref_fscore is None and pair.a.ref_f1 is None and pair.b.ref_cosine is None
    contrib = judge.model.contributions(pair.a, pair.b)
    assert contrib["ref_fscore"] == 0.0 and contrib["ref_f1"] == 0.0
    measured = judge.signals(QUESTION, PairwiseSide(answer=RIGHT), PairwiseSide(answer=WRONG), REFERENCE)
    assert measured.a.ref_fscore is not None and measured.b.ref_fscore is not None
    assert measured.a.ref_fscore > measured.b.ref_fscore
    assert "ref_fscore" in SideSignals.feature_names()


def test_an_empty_reference_is_no_reference(judge: LocalPairwiseJudge) -> None:
    pair = judge.signals(QUESTION, PairwiseSide(answer=RIGHT), PairwiseSide(answer=WRONG), "   ")
    assert pair.a.ref_f1 is None and pair.a.ref_fscore is None


def test_closeness_to_the_reference_weighs_covering_it_above_precision() -> None:
    # the short answer holds 5 of the reference's 12 tokens and nothing else; the longer one holds 8 of them and
    # says more besides: token F1 prefers the short one, the recall-weighted F-score the one that covers more
    reference = "Staff get 25 vacation days per year and may carry 5 over."
    short = "Staff get 25 vacation days."
    complete = "Staff get 25 days off per year, and they may take them when their manager has approved it."
    assert token_fscore(reference, reference) == pytest.approx(1.0)
    assert token_fscore(reference, "") == 0.0 and token_fscore("", "") == 1.0
    assert token_fscore(reference, short, beta=1.0) == pytest.approx(token_f1_multilingual(reference, short))
    assert token_f1_multilingual(reference, short) > token_f1_multilingual(reference, complete)
    assert token_fscore(reference, complete) > token_fscore(reference, short)


async def test_grounding_checks_names_as_well_as_numbers(judge: LocalPairwiseJudge) -> None:
    from ragreplay.core.types import RetrievedChunk

    chunk = RetrievedChunk(
        id="c1", text="Expense claims above 500 euros are approved by Anna de Vries in Finance."
    )
    named = PairwiseSide(
        answer="Claims above 500 euros are approved by Anna de Vries in Finance.", contexts=[chunk]
    )
    other = PairwiseSide(
        answer="Claims above 500 euros are approved by Mark Jansen in Finance.", contexts=[chunk]
    )
    pair = judge.signals("Who approves large expense claims?", named, other)
    assert pair.a.grounded == 1.0 and pair.b.grounded == 0.0
    assert names("approved by Mark Jansen in Finance.") == {"mark", "jansen", "finance"}
    assert (await judge.judge("Who approves large expense claims?", named, other)).winner == "A"


class _Recording:
    """A pairwise judge that records the reference it was given (and one written before references existed)."""

    name = "recording"
    prompt_version = "r1"

    def __init__(self) -> None:
        self.references: list[str | None] = []

    async def judge(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> PairwiseJudgment:
        self.references.append(reference)
        return PairwiseJudgment(
            winner="tie", scores_a=None, scores_b=None, reason="", judge="r", prompt_version="r1"
        )


class _Old:
    name = "old"
    prompt_version = "o1"

    async def judge(self, question: str, a: PairwiseSide, b: PairwiseSide) -> PairwiseJudgment:
        return PairwiseJudgment(
            winner="A", scores_a=None, scores_b=None, reason="", judge="o", prompt_version="o1"
        )


async def test_judge_pair_passes_the_reference_in_both_orders_and_old_judges_still_work() -> None:
    rec = _Recording()
    x, y = PairwiseSide(answer="x"), PairwiseSide(answer="y")
    await judge_pair(rec, "q", x, y, "both", reference="the answer")
    assert rec.references == ["the answer", "the answer"]
    outcome = await judge_pair(_Old(), "q", x, y, "both")
    assert outcome.winner == "tie" and outcome.consistent is False


class _Target:
    def __init__(self, name: str, text: str) -> None:
        self.name, self.version, self.text = name, "v1", text

    async def answer(self, question: str, case: Case) -> Answer:
        return Answer(text=self.text)

    async def aclose(self) -> None:
        return None


class _Fit:
    name = "fit"
    prompt_version = "f1"

    async def judge(self, case: Case, question: str, new_answer: Answer) -> Judgment:
        return Judgment(fit=Fit.FIT, judge="fit", prompt_version="f1")


def _item(reference: str | None) -> SetItem:
    c = Candidate(source="shadow", source_id="row-1", question=QUESTION, reference_answer=reference)
    return SetItem(
        key=c.key, stratum="wound", candidate=c, cluster=0, inclusion_probability=1.0, count=1, weight=1.0
    )


@pytest.mark.parametrize("reference", [REFERENCE, None])
async def test_the_gate_gives_a_wounds_reviewed_answer_to_the_pairwise_judge(reference: str | None) -> None:
    rec = _Recording()
    sides = GateSides(_Target("champion", WRONG), _Target("challenger", RIGHT), rec, _Fit())  # type: ignore[arg-type]
    payload: dict[str, Any] = await judge_item(sides, _item(reference), {"champion": {}, "challenger": {}})
    assert payload["outcome"]["error"] is None
    assert rec.references == [reference, reference]


async def test_the_gate_with_the_local_judge_prefers_the_side_matching_the_reviewed_answer(
    judge: LocalPairwiseJudge,
) -> None:
    sides = GateSides(_Target("champion", WRONG), _Target("challenger", RIGHT), judge, _Fit())  # type: ignore[arg-type]
    with_ref = await judge_item(sides, _item(REFERENCE), {"champion": {}, "challenger": {}})
    without = await judge_item(sides, _item(None), {"champion": {}, "challenger": {}})
    assert with_ref["outcome"]["winner"] == "challenger" and with_ref["outcome"]["consistent"] is True
    assert without["outcome"]["winner"] == "tie"


def test_the_llm_pairwise_prompt_shows_the_reference() -> None:
    from ragreplay.judges.pairwise import REFERENCE_NOTE, LLMPairwiseJudge

    class _Model:
        name = "fake:model"

    llm = LLMPairwiseJudge(_Model())  # type: ignore[arg-type]
    a, b = PairwiseSide(answer=RIGHT), PairwiseSide(answer=WRONG)
    shown = llm.request(QUESTION, a, b, REFERENCE).messages[-1].content
    assert REFERENCE_NOTE in shown and "<reference>" in shown and REFERENCE in shown
    assert "<reference>" not in llm.request(QUESTION, a, b).messages[-1].content


def test_with_a_reference_a_small_closeness_gap_decides_and_near_identical_answers_tie() -> None:
    # the ordinal tie band with a reference is off (it tied pairs the annotators decided); ties come from a
    # similarity cut tuned on RAGChecker's training folds
    model, _ = load_model()
    weight = model.weights[model.features.index("ref_fscore")]
    small = weight * 0.03  # three points of F-score apart
    same = model.same_cut(referenced=True)
    assert same is not None and 0.9 <= same < 1.0
    for similarity in (0.5, same - 0.05):  # similar answers below the cut (the old band widened there)
        assert model.decide(small, similarity, referenced=True) == "A"
        assert model.decide(-small, similarity, referenced=True) == "B"
    assert model.decide(10 * small, same, referenced=True) == "tie"
    assert model.decide(10 * small, same - 0.05, referenced=True) == "A"


def test_near_identical_answers_are_separated_by_their_chunks_only() -> None:
    model, _ = load_model()
    same = model.same_cut(referenced=True)
    assert same is not None
    # the text says A; the chunks (grounding, recency) say B: for answers that say the same, the chunks decide
    assert model.decide(5.0, same, referenced=True, chunk_score=-2.0) == "B"
    assert model.decide(-5.0, same, referenced=True, chunk_score=2.0) == "A"
    assert model.decide(5.0, same, referenced=True, chunk_score=0.0) == "tie"
    # below the cut the whole score decides
    assert model.decide(5.0, same - 0.05, referenced=True, chunk_score=-2.0) == "A"


async def test_without_chunks_or_a_reference_the_fuller_answer_wins(judge: LocalPairwiseJudge) -> None:
    # RAG annotators reward complete answers: "the longer answer wins" is the best answer-only signal on
    # RAGChecker, and the judge now weighs length (log scale, saturating) by a weight chosen there
    brief = PairwiseSide(
        answer="Staff on a full-time contract receive 25 days of paid leave every calendar year."
    )
    full = PairwiseSide(
        answer="Staff on a full-time contract receive 25 days of paid leave every calendar year. Part-time staff "
        "receive a pro-rated number of days based on their contract hours, and up to five unused days carry "
        "over to the next year when a manager approves it before December."
    )
    ab = await judge.judge(QUESTION, brief, full)
    ba = await judge.judge(QUESTION, full, brief)
    assert (ab.winner, ba.winner) == ("B", "A")
    assert "longer answer" in ab.reason


def test_the_length_signal_is_bounded_and_zero_for_a_refusal(judge: LocalPairwiseJudge) -> None:
    refusal = (
        "I'm sorry, but I cannot answer that question based on the provided documents, as they do not say."
    )
    pair = judge.signals(QUESTION, PairwiseSide(answer=refusal), PairwiseSide(answer="x " * 5000))
    assert pair.a.refusal and pair.a.length == 0.0
    assert pair.b.length == 1.0
    assert 0.0 < length("25 days") < length("25 vacation days per calendar year") < 1.0
