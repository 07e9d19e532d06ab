"""Fit and evaluate the local (no-LLM) FIT judge on NQ301 human answer-acceptability labels.

Each row is a question, a list of gold answers (the "old" answer side) and a system's candidate answer (the "new"
side) labelled acceptable or not by people. Signals are computed against every gold answer and combined per
feature (best similarity, least mismatch), so a candidate that fits any gold answer can fit.

Reports question-grouped 5-fold cross-validated accuracy and Cohen's kappa of the local judge (on the cases it
scores, the share it leaves UNSCORABLE, and when forced to decide at p = 0.5) beside two baselines: exact match
(normalised, any gold) and token F1 >= t (t chosen on the training folds). The thresholds lo/hi are chosen on
the training folds too. Then it fits on all rows and writes the model JSON the judge ships with.

    python benchmarks/fit_local_judges.py
    python benchmarks/fit_local_judges.py --limit 60 --output /tmp/model.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from ragreplay.core.types import Fit
from ragreplay.judges import signals as sig
from ragreplay.judges.local_fit import DEFAULT_MODEL_PATH, DEFAULT_RULES, LocalFitModel
from ragreplay.local.embeddings import CachedEmbedder, Embedder, EmbedderName, default_cache_dir, get_embedder

DATA = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "answer-fit-nq301"
    / "nq301_human.normalized.jsonl"
)
LOWER_IS_BETTER = frozenset(
    "number_conflict number_gap date_mismatch negation_mismatch entity_conflict entity_gap refusal_mismatch "
    "question_echo".split()
)
"""Signals where the gold answer that fits best has the smallest value."""


@dataclass
class Dataset:
    """Feature matrix, labels and question groups."""

    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    exact: np.ndarray
    f1: np.ndarray


def load_rows(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The labelled rows (all, or the first ``limit``)."""
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[:limit] if limit else rows


def embed_all(texts: Sequence[str], embedder_name: str, batch: int = 128) -> dict[str, np.ndarray]:
    """Each unique text's embedding, encoded once in batches (cached on disk between runs)."""
    packaged = get_embedder(cast(EmbedderName, embedder_name))
    embedder = CachedEmbedder(cast(Embedder, packaged), default_cache_dir() / "benchmarks")
    unique = sorted(set(texts))
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(unique), batch):
        chunk = unique[start : start + batch]
        out.update(zip(chunk, embedder.encode(chunk), strict=True))
    return out


def featurise(rows: Sequence[dict[str, Any]], vectors: dict[str, np.ndarray]) -> Dataset:
    """Signals per row, combined over the gold answers per feature; plus the baselines' raw scores."""
    x, y, groups, exact, f1 = [], [], [], [], []
    for row in rows:
        cand = row["candidate"]
        per_gold = [
            sig.compute_signals(row["question"], gold, cand, float(vectors[gold] @ vectors[cand]))
            for gold in row["reference"]
        ]
        x.append(
            [
                (min if name in LOWER_IS_BETTER else max)(s[name] for s in per_gold)
                for name in sig.SIGNAL_NAMES
            ]
        )
        y.append(bool(row["label"]))
        groups.append(row["qid"])
        exact.append(any(sig.exact_match(gold, cand) for gold in row["reference"]))
        f1.append(max(sig.token_f1(gold, cand) for gold in row["reference"]))
    return Dataset(np.array(x), np.array(y), np.array(groups), np.array(exact), np.array(f1))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> LocalFitModel:
    """L2-regularised logistic regression on standardised features, by Newton's method (IRLS)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0  # the intercept is not shrunk
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -50, 50)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return LocalFitModel(sig.SIGNAL_NAMES, mean, scale, w[1:], float(w[0]), 0.5, 0.5, rules=DEFAULT_RULES)


def predict(model: LocalFitModel, x: np.ndarray) -> np.ndarray:
    """Probabilities of FIT for each row of ``x``."""
    logits = model.intercept + ((x - model.mean) / model.scale) @ model.coef
    probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50)))
    return probabilities


def cohen_kappa(truth: Sequence[bool] | np.ndarray, pred: Sequence[bool] | np.ndarray) -> float:
    """Cohen's kappa of two binary labelings: (observed - chance agreement) / (1 - chance agreement)."""
    t, p = np.asarray(truth, dtype=bool), np.asarray(pred, dtype=bool)
    if not len(t):
        return float("nan")
    observed = float(np.mean(t == p))
    chance = float(t.mean() * p.mean() + (1 - t.mean()) * (1 - p.mean()))
    return 1.0 if chance == 1.0 else (observed - chance) / (1 - chance)


def group_folds(groups: np.ndarray, k: int = 5, seed: int = 0) -> np.ndarray:
    """A fold number per row; all rows of one question share a fold."""
    unique = np.unique(groups)
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {g: i % k for i, g in zip(order, unique, strict=True)}
    return np.array([fold_of[g] for g in groups])


def out_of_fold(x: np.ndarray, y: np.ndarray, folds: np.ndarray, l2: float) -> np.ndarray:
    """Each row's probability from a model fitted without its fold."""
    probs = np.zeros(len(y))
    for f in np.unique(folds):
        test = folds == f
        probs[test] = predict(fit_logistic(x[~test], y[~test], l2), x[test])
    return probs


def choose_thresholds(
    probs: np.ndarray, y: np.ndarray, outcomes: np.ndarray, max_abstain: float
) -> tuple[float, float]:
    """The (lo, hi) that maximise accuracy on the decided rows while leaving at most ``max_abstain`` undecided.

    ``outcomes`` (from :func:`rule_outcomes`) applies the rules, so rows a rule decides count as decided.
    """
    best = (-1.0, 0.5, 0.5)
    grid = np.round(np.arange(0.05, 0.951, 0.025), 3)
    for lo in grid[grid <= 0.5]:
        for hi in grid[grid >= 0.5]:
            codes = apply_outcomes(outcomes, np.where(probs >= hi, 1, np.where(probs <= lo, 0, -1)))
            decided = codes >= 0
            if decided.sum() == 0 or 1 - decided.mean() > max_abstain:
                continue
            accuracy = float(np.mean((codes[decided] == 1) == y[decided]))
            if accuracy > best[0] + 1e-9:
                best = (accuracy, float(lo), float(hi))
    return best[1], best[2]


def choose_f1_threshold(f1: np.ndarray, y: np.ndarray) -> float:
    """The token-F1 cut-off with the best accuracy on these rows."""
    candidates = np.unique(np.concatenate([f1, [1.01]]))
    accuracy = [np.mean((f1 >= t) == y) for t in candidates]
    return float(candidates[int(np.argmax(accuracy))])


_CODE = {Fit.FIT: 1, Fit.NO_FIT: 0, Fit.UNSCORABLE: -1}
_BASE = (Fit.FIT, Fit.NO_FIT, Fit.UNSCORABLE)


def rule_outcomes(model: LocalFitModel, x: np.ndarray) -> np.ndarray:
    """Per row, the decision code after the model's rules for each base decision (columns FIT, NO_FIT, UNSC.)."""
    out = np.zeros((len(x), 3), dtype=int)
    for i, row in enumerate(x):
        signals = dict(zip(model.features, row, strict=True))
        for j, base in enumerate(_BASE):
            rule = model.matching_rule(signals, base)
            out[i, j] = _CODE[rule.fit if rule is not None else base]
    return out


def apply_outcomes(outcomes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The rule-adjusted code of each row, given its base decision code (1, 0 or -1)."""
    column = np.where(codes == 1, 0, np.where(codes == 0, 1, 2))
    return outcomes[np.arange(len(codes)), column]


def decide_all(model: LocalFitModel, x: np.ndarray, forced: bool = False) -> np.ndarray:
    """The judge's decisions (1 FIT, 0 NO_FIT, -1 UNSCORABLE) with the model's rules applied.

    ``forced``: decide at p = 0.5, and a rule that would leave a case UNSCORABLE keeps the forced decision.
    """
    probs = predict(model, x)
    if forced:
        base = np.where(probs >= 0.5, 1, 0)
        codes = apply_outcomes(rule_outcomes(model, x), base)
        return np.where(codes < 0, base, codes)
    base = np.where(probs >= model.hi, 1, np.where(probs <= model.lo, 0, -1))
    return apply_outcomes(rule_outcomes(model, x), base)


@dataclass
class Scores:
    """Cross-validated predictions of each method, pooled over the outer folds (1 / 0 / -1 = unscorable)."""

    exact: np.ndarray
    f1: np.ndarray
    forced: np.ndarray
    local: np.ndarray
    plain: np.ndarray  # lo/hi without the rules


def cross_validate(data: Dataset, k: int, l2: float, max_abstain: float) -> Scores:
    """Question-grouped k-fold CV; every threshold is chosen on the training folds only."""
    folds = group_folds(data.groups, k)
    f1_pred = np.zeros(len(data.y), dtype=bool)
    forced, local, plain = (np.zeros(len(data.y), dtype=int) for _ in range(3))
    for f in range(k):
        test, train = folds == f, folds != f
        if not test.any():
            continue
        f1_pred[test] = data.f1[test] >= choose_f1_threshold(data.f1[train], data.y[train])
        inner = group_folds(data.groups[train], k, seed=f + 1)
        model = fit_logistic(data.x[train], data.y[train], l2)
        inner_probs = out_of_fold(data.x[train], data.y[train], inner, l2)
        lo, hi = choose_thresholds(
            inner_probs, data.y[train], rule_outcomes(model, data.x[train]), max_abstain
        )
        model = replace(model, lo=lo, hi=hi)
        forced[test] = decide_all(model, data.x[test], forced=True)
        local[test] = decide_all(model, data.x[test])
        plain[test] = decide_all(replace(model, rules=()), data.x[test])
    return Scores(data.exact, f1_pred, forced, local, plain)


def table(data: Dataset, scores: Scores) -> str:
    """The Markdown table of accuracy, kappa and coverage per method."""
    n = len(data.y)
    lines = ["| method | accuracy | Cohen's kappa | scored | unscorable |", "|---|---|---|---|---|"]

    def row(name: str, pred: np.ndarray, mask: np.ndarray) -> None:
        acc = float(np.mean(pred[mask] == data.y[mask])) if mask.any() else float("nan")
        kappa = cohen_kappa(data.y[mask], pred[mask])
        lines.append(f"| {name} | {acc:.3f} | {kappa:.3f} | {int(mask.sum())} | {1 - mask.sum() / n:.1%} |")

    everything = np.ones(n, dtype=bool)
    row("exact match (normalised, any gold)", scores.exact, everything)
    row("token F1 >= t (t by CV)", scores.f1, everything)
    row("local judge, forced (p >= 0.5, rules)", scores.forced == 1, everything)
    row("local judge, lo/hi without rules (scored)", scores.plain == 1, scores.plain >= 0)
    row("**local judge, lo/hi + rules (scored)**", scores.local == 1, scores.local >= 0)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Run the benchmark; write the fitted model unless ``--no-write``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N rows")
    parser.add_argument("--embedder", choices=["use", "e5"], default="use")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument(
        "--max-unscorable", type=float, default=0.12, help="most UNSCORABLE share lo/hi may leave"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"NQ301 data not found at {args.data}. Fix: pass --data PATH", file=sys.stderr)
        return 2

    started = time.perf_counter()
    rows = load_rows(args.data, args.limit)
    texts = [t for r in rows for t in (r["candidate"], *r["reference"])]
    data = featurise(rows, embed_all(texts, args.embedder))
    scores = cross_validate(data, args.folds, args.l2, args.max_unscorable)

    out(f"## Local FIT judge on NQ301 ({len(rows)} rows, {len(np.unique(data.groups))} questions)\n")
    out(table(data, scores))
    final = fit_logistic(data.x, data.y, args.l2)
    lo, hi = choose_thresholds(
        out_of_fold(data.x, data.y, group_folds(data.groups, args.folds), args.l2),
        data.y,
        rule_outcomes(final, data.x),
        args.max_unscorable,
    )
    command = "python benchmarks/fit_local_judges.py" + (" " + " ".join(argv) if argv else "")
    meta = {"fitted_on": f"NQ301 human labels, {len(rows)} rows", "l2": args.l2, "command": command}
    model = replace(final, lo=lo, hi=hi, embedder=args.embedder, meta=meta)
    out(f"\nThresholds on all rows: lo={lo:.3f}, hi={hi:.3f}. Coefficients (standardised):")
    out(", ".join(f"{n} {c:+.2f}" for n, c in zip(model.features, model.coef, strict=True)))
    if not args.no_write:
        args.output.write_text(json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8")
        out(f"Wrote {args.output}")
    out(f"\nCommand: `{command}` ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
