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
