"""The local FIT judge's fitting script (benchmarks/fit_local_judges.py): its statistics, fits-any training and
decisions, the UNSCORABLE band, and a small run over both dev sets that writes a model the judge loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragreplay.judges.local_fit import load_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fit_local_judges as bench  # noqa: E402

# ---------------------------------------------------------------- the benchmark's statistics


def test_cohen_kappa_matches_a_hand_computation() -> None:
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no. Observed 0.7; chance 0.5*0.6 + 0.5*0.4 = 0.5.
    truth = [True] * 25 + [False] * 25
    pred = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert bench.cohen_kappa(truth, pred) == pytest.approx(0.4)
    assert bench.cohen_kappa(truth, truth) == 1.0
    assert bench.cohen_kappa(truth, [not t for t in truth]) == pytest.approx(-1.0)


def test_group_folds_keep_each_question_in_one_fold() -> None:
    groups = np.array([str(i // 3) for i in range(60)])
    folds = bench.group_folds(groups, k=5)
    for g in np.unique(groups):
        assert len(set(folds[groups == g])) == 1
    assert set(folds) == set(range(5))


def test_logistic_fit_separates() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 4))
    y = x[:, 0] + 0.5 * rng.normal(size=400) > 0
    model = bench.fit_logistic(x, y)
    assert model.coef[0] > 1.0 and abs(model.coef[1]) < 0.3
    assert np.mean((bench.predict(model, x) >= 0.5) == y) > 0.8


def synthetic(n_rows: int = 300, seed: int = 0) -> bench.Dataset:
    """Rows with two references each: a decoy whose features are noise, and one whose novel recall tells."""
    rng = np.random.default_rng(seed)
    y = rng.random(n_rows) < 0.5
    width = len(bench.FEATURES)
    recall = bench.FEATURES.index("novel_recall")
    x = np.zeros((2 * n_rows, width))
    x[0::2, recall] = rng.random(n_rows) * 0.3  # the decoy reference
    x[1::2, recall] = np.where(y, 0.7, 0.1) + 0.2 * rng.random(n_rows)
    pair_row = np.repeat(np.arange(n_rows), 2)
    groups = np.array([str(i) for i in range(n_rows)])
    zeros = np.zeros(n_rows)
    source = np.array(["s"] * n_rows)
    return bench.Dataset(x, pair_row, y, groups, source, zeros > 0, zeros, zeros, 0.0)


def test_fits_any_training_learns_from_the_best_reference_and_decides_per_row() -> None:
    data = synthetic()
    everything = np.ones(len(data.y), dtype=bool)
    model = bench.fit_any(data, everything, l2=1.0)
    assert model.features == bench.MODEL_FEATURES
    assert model.coef[bench.MODEL_FEATURES.index("novel_recall")] > 1.0
    outcomes, which = bench.rule_outcomes(model, data.x)
    decided = bench.decide_rows(model, data, everything, outcomes, which)
    assert np.mean((decided.code == 1) == data.y) > 0.95  # a row fits when its best reference fits
    assert set(np.unique(decided.guess)) <= {0, 1}


def test_best_per_row_picks_each_rows_highest_pair() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.2, 0.3])
    pair_row = np.array([0, 0, 1, 1, 2])
    assert list(bench.best_per_row(scores, pair_row, 3)) == [1, 2, 4]


def test_the_unscorable_band_stays_narrow_and_under_the_cap() -> None:
    data = synthetic(seed=1)
    everything = np.ones(len(data.y), dtype=bool)
    model = bench.fit_any(data, everything, l2=1.0)
    outcomes, which = bench.rule_outcomes(model, data.x)
    lo, hi = bench.choose_band(model, data, everything, outcomes, which, max_abstain=0.03)
    assert 0.3 <= lo <= 0.5 <= hi <= 0.7
    decided = bench.decide_rows(
        model.__class__(**{**model.__dict__, "lo": lo, "hi": hi}), data, everything, outcomes, which
    )
    assert np.mean(decided.code == -1) <= 0.03


@pytest.mark.skipif(
    not all(p.exists() for p in bench.SETS.values()), reason=f"dev sets not at {bench.SHARED}"
)
def test_benchmark_runs_small_on_both_sets_and_writes_a_loadable_model(tmp_path: Path) -> None:
    output = tmp_path / "model.json"
    env = {**os.environ, "RAGREPLAY_CACHE_DIR": str(tmp_path / "cache")}
    script = str(ROOT / "benchmarks" / "fit_local_judges.py")
    args = [sys.executable, script, "--limit", "40", "--folds", "3", "--output", str(output)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=300, env=env).stdout
    for expected in (
        "## nq301: 40 rows",
        "## evouna: 40 rows",
        "held out: fitted on the other set only",
        "containment (a gold answer inside the candidate)",
        "token recall >= t",
        "token F1 >= t",
        "accuracy, all rows",
        "local judge, best guess",
        "ms per (reference, candidate) pair",
        "Command:",
    ):
        assert expected in out, expected
    model, _ = load_model(output)
    assert model.features == bench.MODEL_FEATURES and 0 <= model.lo <= 0.5 <= model.hi <= 1
