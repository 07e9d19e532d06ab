"""The reference for SQuAD's token F1 and exact match: torchmetrics' SQuAD functions (a maintained library whose
normalisation is the official SQuAD evaluation script's: lower-case, ASCII punctuation deleted, the articles
a/an/the dropped as words, whitespace collapsed).

Two documented differences from the v1.1 script, which ragreplay follows: torchmetrics computes F1 in float32
(compare within 1e-6), and it scores two answers that both normalise to nothing as F1 1 (SQuAD v2.0's rule for
"no answer"), where v1.1 gives 0 (no token in common); :func:`both_empty` tells those pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

squad = pytest.importorskip(
    "torchmetrics.functional.text.squad", reason="the SQuAD reference needs torchmetrics"
)


def normalize_answer(text: str) -> str:
    """The script's normalisation."""
    return str(squad._normalize_text(text))


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of two answers (float32)."""
    return float(squad._compute_f1_score(prediction, ground_truth))


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """Whether the two normalised answers are equal."""
    return bool(int(squad._compute_exact_match_score(prediction, ground_truth)))


def metric_max_over_ground_truths(
    metric: Callable[[str, str], float | bool], prediction: str, ground_truths: Sequence[str]
) -> float | bool:
    """The best score of ``prediction`` against any of ``ground_truths``."""
    return max(metric(prediction, truth) for truth in ground_truths)


def both_empty(prediction: str, ground_truth: str) -> bool:
    """True when both answers normalise to no token (v1.1 and torchmetrics score such a pair differently)."""
    return not normalize_answer(prediction).split() and not normalize_answer(ground_truth).split()
