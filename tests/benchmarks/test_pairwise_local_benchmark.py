"""The local pairwise judge's fitting script (benchmarks/pairwise_local_judge.py): a small run that writes a
model the judge loads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragreplay.judges.local_pairwise import LocalPairwiseJudge

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pairwise_local_judge  # noqa: E402

PANDALM = pairwise_local_judge.DATA

# ---------------------------------------------------------------- the benchmark


@pytest.mark.skipif(not PANDALM.exists(), reason=f"PandaLM dev data not at {PANDALM}")
def test_the_benchmark_runs_on_a_small_subset_and_writes_a_loadable_model(tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    metrics = pairwise_local_judge.main(
        [
            "--limit",
            "60",
            "--folds",
            "3",
            "--write",
            "--model-out",
            str(out),
            "--json",
            str(tmp_path / "m.json"),
        ]
    )
    assert metrics["n"] == 60 and metrics["longer_lost_n"] > 0
    assert metrics["position_consistency"] == 1.0
    assert 0.0 <= metrics["judge"]["accuracy"] <= 1.0
    assert sum(metrics["predicted"].values()) == 60
    judge = LocalPairwiseJudge(model_path=out)
    assert judge.model.weights and json.loads((tmp_path / "m.json").read_text())["n"] == 60


RAGCHECKER = pairwise_local_judge.RAGCHECKER


@pytest.mark.skipif(not RAGCHECKER.exists(), reason=f"RAGChecker dev data not at {RAGCHECKER}")
def test_the_ragchecker_mode_runs_small_and_writes_the_reference_part(tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    shipped = json.loads(pairwise_local_judge.DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    out.write_text(json.dumps(pairwise_local_judge.base_part(shipped)), encoding="utf-8")
    metrics = pairwise_local_judge.main(
        ["--ragchecker", "--limit", "40", "--folds", "2", "--write", "--model-out", str(out)]
    )
    assert metrics["n"] == 40 and metrics["folds"] == 2
    for method in ("judge_reference", "judge", "closer_cosine", "closer_f1", "closer_fscore", "longer_wins"):
        figures = metrics[method]
        assert 0.0 <= figures["decided_accuracy"] <= 1.0 and 0.0 <= figures["accuracy_3way"] <= 1.0
        assert "tie_recall" in figures and "tie_precision" in figures
    assert 0.0 <= metrics["human"]["agreement_3way"] <= 1.0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["tie"]["reference"] is not None and "ref_fscore" in written["reference_features"]
    assert len(metrics["betas"]) == 2 and set(metrics["betas"]) <= set(pairwise_local_judge.BETAS)
    assert written["weights"]["ref_f1"] == 0.0  # the former reference feature is no longer fitted
    assert written["weights"]["grounded"] == shipped["weights"]["grounded"]  # the PandaLM part is kept
    # the length weight and the tie rules are chosen on the training rows, from the documented grids
    assert written["weights"]["length"] in pairwise_local_judge.LENGTH_WEIGHTS
    assert written["tie"]["reference"] == pairwise_local_judge.NO_ORDINAL_TIE
    for key in ("same_from", "same_from_reference"):
        assert key in written["tie"] and written["tie"][key] in (None, *pairwise_local_judge.SAME_CUTS)
    assert len(metrics["ties_chosen"]) == 2
    judge = LocalPairwiseJudge(model_path=out)
    assert judge.model.tie_reference is not None
    assert judge.prompt_version != LocalPairwiseJudge().prompt_version


def test_the_baselines_closer_to_the_gold_answer() -> None:
    assert pairwise_local_judge._closer(0.4, 0.2) == "A" and pairwise_local_judge._closer(0.1, 0.3) == "B"
    assert pairwise_local_judge._closer(0.2, 0.2) == "tie"


def _rag_row(label: str, gap: float, similarity: float) -> pairwise_local_judge.RagRow:
    from ragreplay.judges.local_pairwise_signals import PairSignals, SideSignals

    def side(fscore: float) -> SideSignals:
        return SideSignals(
            grounded=None,
            recency=None,
            first_relevance=0.3,
            answer_relevance=0.3,
            term_coverage=0.5,
            refusal=False,
            hedging=False,
            filler=False,
            question_copy=0.0,
            repeated_items=0.0,
            repeated_phrases=0.0,
            word_variety=0.8,
            substance=1.0,
            ref_cosine=0.5,
            ref_fscore=fscore,
            length=0.5,
        )

    pair = PairSignals(side(0.5 + gap), side(0.5), similarity)
    return pairwise_local_judge.RagRow("g", "k", "q", "a", "b", "r", label, pair, pair)  # type: ignore[arg-type]


def test_the_tie_rules_tie_near_identical_answers_only_where_annotators_tie() -> None:
    shipped = json.loads(pairwise_local_judge.DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    decided = [_rag_row("A", 0.1, 0.5), _rag_row("B", -0.1, 0.5)] * 5
    # near-identical answers the annotators call a tie, leaning as far as decided pairs: only the similarity cut
    # can catch them
    ties = pairwise_local_judge.calibrate_ties([*decided, *[_rag_row("tie", 0.1, 0.97)] * 4], shipped)
    assert ties["same_from_reference"] is not None and ties["same_from_reference"] <= 0.97
    assert ties["band_reference"] == 0.0
    # near-identical answers the annotators decided: no cut (ties there would be wrong)
    decided_too = pairwise_local_judge.calibrate_ties([*decided, *[_rag_row("B", 0.1, 0.97)] * 4], shipped)
    assert decided_too["same_from_reference"] is None
