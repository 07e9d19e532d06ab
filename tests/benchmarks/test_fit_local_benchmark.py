"""The local FIT judge's fitting script (benchmarks/fit_local_judges.py): its statistics, and a small run that
writes a model the judge loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragreplay.judges import signals as sig
from ragreplay.judges.local_fit import load_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fit_local_judges  # noqa: E402

# ---------------------------------------------------------------- the benchmark's statistics


def test_cohen_kappa_matches_a_hand_computation() -> None:
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no. Observed 0.7; chance 0.5*0.6 + 0.5*0.4 = 0.5.
    truth = [True] * 25 + [False] * 25
    pred = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert fit_local_judges.cohen_kappa(truth, pred) == pytest.approx(0.4)
    assert fit_local_judges.cohen_kappa(truth, truth) == 1.0
    assert fit_local_judges.cohen_kappa(truth, [not t for t in truth]) == pytest.approx(-1.0)


def test_group_folds_keep_each_question_in_one_fold() -> None:
    groups = np.array([str(i // 3) for i in range(60)])
    folds = fit_local_judges.group_folds(groups, k=5)
    for g in np.unique(groups):
        assert len(set(folds[groups == g])) == 1
    assert set(folds) == set(range(5))


def test_logistic_fit_separates_and_thresholds_respect_the_abstain_cap() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, len(sig.SIGNAL_NAMES)))
    y = x[:, 0] + 0.5 * rng.normal(size=400) > 0
    model = fit_local_judges.fit_logistic(x, y)
    assert model.coef[0] > 1.0 and abs(model.coef[1]) < 0.3
    probs = fit_local_judges.predict(model, x)
    assert np.mean((probs >= 0.5) == y) > 0.85
    no_rules = np.tile(np.array([1, 0, -1]), (len(y), 1))
    lo, hi = fit_local_judges.choose_thresholds(probs, y, no_rules, max_abstain=0.1)
    assert lo <= 0.5 <= hi and np.mean((probs > lo) & (probs < hi)) <= 0.1


@pytest.mark.skipif(not fit_local_judges.DATA.exists(), reason=f"NQ301 data not at {fit_local_judges.DATA}")
def test_benchmark_runs_on_a_subset_and_writes_a_loadable_model(tmp_path: Path) -> None:
    output = tmp_path / "model.json"
    env = {**os.environ, "RAGREPLAY_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "fit_local_judges.py"),
            "--limit",
            "60",
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    assert "(60 rows" in out and "token F1 >= t" in out and "lo/hi + rules" in out and "Command:" in out
    model, _ = load_model(output)
    assert model.features == sig.SIGNAL_NAMES and 0 <= model.lo <= model.hi <= 1
