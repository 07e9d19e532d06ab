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
    judge = LocalPairwiseJudge(model_path=out)
    assert judge.model.tie_reference is not None
    assert judge.prompt_version != LocalPairwiseJudge().prompt_version


def test_the_baselines_closer_to_the_gold_answer() -> None:
    assert pairwise_local_judge._closer(0.4, 0.2) == "A" and pairwise_local_judge._closer(0.1, 0.3) == "B"
    assert pairwise_local_judge._closer(0.2, 0.2) == "tie"
