"""The eval metrics from Python one row at a time: the same figures `ragreplay eval` computes, undetermined
LLM metrics with their reason, and a blank reference refused."""

from __future__ import annotations

import asyncio

import pytest

import ragreplay
from ragreplay.core.eval import EvalContext, EvalRow
from ragreplay.evaluation.run import lexical_scores
from ragreplay.metrics import bleu, ndcg_at, token_f1
from ragreplay.metrics.llm import LLM_METRICS, score_row
from ragreplay.providers.fake import FakeChatModel

QUESTION = "When does the office open?"
ANSWER = "The office opens at nine. Parking is free."
CONTEXT = "The office opens at nine every weekday."
REFERENCE = "The office opens at nine."


def test_lexical_metrics_are_the_eval_rows_figures() -> None:
    scores = ragreplay.lexical_metrics(ANSWER, reference=REFERENCE)
    row = EvalRow(id="r", question=QUESTION, answer=ANSWER, reference=REFERENCE)
    assert scores == {name: value.value for name, value in lexical_scores(row).items()}
    assert scores["token_f1"] == pytest.approx(token_f1(ANSWER, REFERENCE))
    assert scores["bleu"] == pytest.approx(bleu(ANSWER, REFERENCE) / 100)
    assert ragreplay.lexical_metrics(REFERENCE, REFERENCE)["exact_match"] == 1.0
    with pytest.raises(ValueError, match="reference that is not blank"):
        ragreplay.lexical_metrics(ANSWER, reference="  ")


def test_retrieval_metrics_of_one_ranking() -> None:
    scores = ragreplay.retrieval_metrics(["b", "a", "x"], {"a": 2, "c": 1})
    assert set(scores) == {"P@5", "R@10", "Hit@5", "MRR", "nDCG@10", "MAP"}
    assert scores["MRR"] == 0.5 and scores["R@10"] == 0.5 and scores["P@5"] == pytest.approx(0.2)
    assert scores["nDCG@10"] == pytest.approx(ndcg_at(["b", "a", "x"], {"a": 2, "c": 1}, k=10))
    assert ragreplay.retrieval_metrics(["a"], {"a": 1}, metrics=("P@1",)) == {"P@1": 1.0}


def test_llm_metrics_with_a_model_spec_match_the_eval_job() -> None:
    scores = ragreplay.llm_metrics(
        QUESTION, ANSWER, judge="fake:default", contexts=[CONTEXT], reference=REFERENCE
    )
    row = EvalRow(
        id="row",
        question=QUESTION,
        answer=ANSWER,
        reference=REFERENCE,
        contexts=(EvalContext(id="1", text=CONTEXT),),
    )
    assert scores == asyncio.run(score_row(FakeChatModel(), row)).metrics
    assert set(scores) == set(LLM_METRICS) and scores["faithfulness"].value == pytest.approx(0.5)


def test_llm_metrics_say_why_a_metric_is_undetermined() -> None:
    scores = ragreplay.llm_metrics(QUESTION, ANSWER, judge="fake:default")
    assert scores["faithfulness"].value is None and scores["faithfulness"].reason == "no contexts"
    assert scores["correctness"].reason == "no reference"
    assert scores["answer_relevance"].value is not None
