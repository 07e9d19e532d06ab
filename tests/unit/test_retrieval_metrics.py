"""Retrieval metrics on chunk ids, checked against trec_eval (ir-measures over pytrec-eval-terrier) on the
Cranfield collection to 1e-9, per query and averaged; and the edge cases by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragreplay.core.retrieval_metrics import (
    average_precision,
    evaluate_retrieval,
    hit_at,
    metric_value,
    ndcg_at,
    precision_at,
    recall_at,
    reciprocal_rank,
)

CRANFIELD = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval-cranfield"


def test_by_hand() -> None:
    judged = {"a": 3, "b": 0, "c": 1, "d": 2}
    ranking = ["b", "a", "a", "x", "c"]  # the repeated "a" counts once; "x" is unjudged
    assert precision_at(ranking, judged, 2) == 0.5 and precision_at(ranking, judged, 10) == 0.2
    assert recall_at(ranking, judged, 4) == pytest.approx(2 / 3)
    assert hit_at(ranking, judged, 1) == 0.0 and hit_at(ranking, judged, 2) == 1.0
    assert reciprocal_rank(ranking, judged) == 0.5 and reciprocal_rank(ranking, judged, k=1) == 0.0
    assert average_precision(ranking, judged) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert precision_at(ranking, judged, 4, min_relevance=2) == 0.25
    # nDCG@3: gains 0, 3, 0 against the ideal 3, 2, 1
    assert ndcg_at(ranking, judged, 3) == pytest.approx((3 / 1.5849625007211562) / (3 + 2 / 1.5849625 + 0.5))
    assert ndcg_at(ranking, judged, 3, gain="exponential") == pytest.approx(
        (7 / 1.5849625007211562) / (7 + 3 / 1.5849625007211562 + 1 / 2)
    )
    nothing = {"a": 0}
    assert (
        recall_at(ranking, nothing, 5)
        == average_precision(ranking, nothing)
        == ndcg_at(ranking, nothing, 5)
        == 0
    )
    assert precision_at([], judged, 5) == 0.0


def test_names_and_mistakes() -> None:
    judged = {"a": 1}
    assert metric_value("MRR@1", ["a"], judged) == 1.0 and metric_value("MAP", ["a"], judged) == 1.0
    for bad in ("P", "nDCG", "MAP@5", "F1@3", "p@5"):
        with pytest.raises(ValueError):
            metric_value(bad, ["a"], judged)
    scores = evaluate_retrieval({"q1": ["a"], "unjudged": ["z"]}, {"q1": judged, "q2": {"b": 2}}, ["P@1"])
    assert scores.queries == 2 and scores.means["P@1"] == 0.5  # q2 retrieved nothing; "unjudged" left out
    assert scores.per_query["q2"]["P@1"] == 0.0


@pytest.mark.skipif(not CRANFIELD.exists(), reason=f"Cranfield not at {CRANFIELD}")
@pytest.mark.parametrize("exponential", [False, True], ids=["linear gain", "exponential gain"])
def test_agrees_with_trec_eval_on_cranfield(exponential: bool) -> None:
    bm25s = pytest.importorskip("bm25s")
    ir_measures = pytest.importorskip("ir_measures")
    read = lambda name: [json.loads(line) for line in (CRANFIELD / name).read_text().splitlines() if line]  # noqa: E731
    corpus, queries, qrels = (
        read("corpus.normalized.jsonl"),
        read("queries.normalized.jsonl"),
        read("qrels.normalized.jsonl"),
    )
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([c["title"] + " " + c["text"] for c in corpus], show_progress=False),
        show_progress=False,
    )
    found, _ = retriever.retrieve(
        bm25s.tokenize([q["text"] for q in queries], show_progress=False), k=100, show_progress=False
    )
    rankings = {q["_id"]: [corpus[int(i)]["_id"] for i in row] for q, row in zip(queries, found, strict=True)}
    judgments: dict[str, dict[str, int]] = {}
    for row in qrels:
        judgments.setdefault(row["query_id"], {})[row["doc_id"]] = int(row["relevance"])
    ours = evaluate_retrieval(
        rankings,
        judgments,
        ["P@5", "P@10", "R@10", "R@100", "Hit@5", "MRR", "nDCG@10", "nDCG@100", "MAP"],
        gain="exponential" if exponential else "linear",
    )
    # trec_eval: strictly decreasing scores keep our order (it breaks ties by doc id); exponential gain is the
    # linear one on grades 2**g - 1
    run = [
        ir_measures.ScoredDoc(q, doc, float(len(docs) - rank))
        for q, docs in rankings.items()
        for rank, doc in enumerate(docs)
    ]
    grade = (lambda g: 2**g - 1) if exponential else (lambda g: g)
    reference_qrels = [
        ir_measures.Qrel(q, d, grade(g)) for q, docs in judgments.items() for d, g in docs.items()
    ]
    binary_qrels = [ir_measures.Qrel(q, d, g) for q, docs in judgments.items() for d, g in docs.items()]
    M = ir_measures
    pairs = {
        "P@5": M.P @ 5,
        "P@10": M.P @ 10,
        "R@10": M.R @ 10,
        "R@100": M.R @ 100,
        "Hit@5": M.Success @ 5,
        "MRR": M.RR,
        "MAP": M.AP,
    }
    graded = {"nDCG@10": M.nDCG @ 10, "nDCG@100": M.nDCG @ 100}
    expected: dict[str, dict[str, float]] = {}
    for qrels_used, measures in ((binary_qrels, pairs), (reference_qrels, graded)):
        by_measure = {v: k for k, v in measures.items()}
        for m in M.iter_calc(list(measures.values()), qrels_used, run):
            expected.setdefault(m.query_id, {})[by_measure[m.measure]] = m.value
    assert set(expected) == set(ours.per_query) and len(expected) == 225
    for query, values in expected.items():
        for name, value in values.items():
            assert ours.per_query[query][name] == pytest.approx(value, abs=1e-9), (query, name)
    assert ours.means["nDCG@10"] > 0.3  # a real run, not an empty one
