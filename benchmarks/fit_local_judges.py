"""Fit and evaluate the local (no-LLM) FIT judge on two human-labelled dev sets: NQ301 and EVOUNA-NQ (dev half).

Each row is a question, a list of gold answers (the references: the "old" answer side) and a system's candidate
answer (the "new" side) labelled acceptable or not by people. As in the product, every reference is judged on its
own and the candidate fits when it fits any (:func:`ragreplay.judges.references.combine`); the model is fitted the
same way (each row's training pair is its best-scoring reference, re-chosen for a few rounds).

Reported, per set and never in-sample: question-grouped k-fold cross-validation over both sets pooled (questions
grouped by their normalised text, so a question in both sets stays in one fold), and a held-out transfer (fit on
one set, report on the other). Every threshold (the baselines' cut-offs, the UNSCORABLE band) is chosen on the
training rows only. Accuracy is over **all** rows, UNSCORABLE counted wrong, beside coverage, accuracy on the
scored rows and the best guess's accuracy; the baselines on the same rows are containment (a normalised gold
answer inside the candidate), token recall >= t and token F1 >= t. Then it fits on all rows and writes the model.

    python benchmarks/fit_local_judges.py
    python benchmarks/fit_local_judges.py --limit 300 --no-write
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
from ragreplay.judges import fit_features
from ragreplay.judges import signals as sig
from ragreplay.judges.local_fit import DEFAULT_MODEL_PATH, DEFAULT_RULES, LocalFitModel
from ragreplay.local.embeddings import CachedEmbedder, Embedder, EmbedderName, default_cache_dir, get_embedder

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = {
    "nq301": SHARED / "answer-fit-nq301" / "nq301_human.normalized.jsonl",
    "evouna": SHARED / "answer-fit-evouna-nq-dev" / "evouna_nq_dev.normalized.jsonl",
}
DATA = SETS["nq301"]
FEATURES = fit_features.FEATURE_NAMES
SHAPE = frozenset(["length_ratio", "new_length", "question_echo"])
"""Features that describe the answers' shape, not their content: left out of the model. Fitted on NQ301's short
spans alone they cost 5 points on EVOUNA's sentences (best guess 0.850 with them, 0.906 without), and nothing in
cross-validation."""
MODEL_FEATURES = tuple(f for f in FEATURES if f not in SHAPE)
_MODEL_COLUMNS = np.array([FEATURES.index(f) for f in MODEL_FEATURES])


@dataclass
class Dataset:
    """Features per (row, reference) pair; labels, groups, sets and the baselines' scores per row."""

    x: np.ndarray
    pair_row: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    source: np.ndarray
    contain: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    ms_per_pair: float


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


def contains_gold(gold: str, candidate: str) -> bool:
    """The containment baseline: the normalised gold answer occurs in the normalised candidate as whole words."""
    g = sig.normalize_multilingual(gold)
    return bool(g) and f" {g} " in f" {sig.normalize_multilingual(candidate)} "


def featurise(rows: Sequence[dict[str, Any]], vectors: dict[str, np.ndarray]) -> Dataset:
    """Features of every (reference, candidate) pair, and the baselines' scores per row."""
    x, pair_row, y, groups, source, contain, recall, f1 = ([] for _ in range(8))
    seconds = 0.0
    for i, row in enumerate(rows):
        cand, question = row["candidate"], row["question"]
        for gold in row["reference"]:
            cosine = float(vectors[gold] @ vectors[cand])
            started = time.perf_counter()
            values = fit_features.compute(question, gold, cand, cosine)
            seconds += time.perf_counter() - started
            x.append([values[f] for f in FEATURES])
            pair_row.append(i)
        y.append(bool(row["label"]))
        groups.append(sig.normalize_multilingual(question))
        source.append(row["set"])
        contain.append(any(contains_gold(g, cand) for g in row["reference"]))
        recall.append(max(sig.containment(g, cand) for g in row["reference"]))
        f1.append(max(sig.token_f1_multilingual(g, cand) for g in row["reference"]))
    xs, rows_of, ys, gs, ss, cs, rs, fs = (
        np.array(v) for v in (x, pair_row, y, groups, source, contain, recall, f1)
    )
    return Dataset(xs, rows_of, ys, gs, ss, cs, rs, fs, ms_per_pair=1000 * seconds / max(len(x), 1))


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
    names = MODEL_FEATURES if x.shape[1] == len(MODEL_FEATURES) else tuple(f"f{i}" for i in range(x.shape[1]))
    return LocalFitModel(names, mean, scale, w[1:], float(w[0]), 0.5, 0.5, rules=DEFAULT_RULES)


def predict(model: LocalFitModel, x: np.ndarray) -> np.ndarray:
    """Probabilities of FIT for each row of ``x`` (all :data:`FEATURES`, or only the model's columns)."""
    if x.shape[1] == len(FEATURES) and len(model.features) == len(MODEL_FEATURES):
        x = x[:, _MODEL_COLUMNS]
    logits = model.intercept + ((x - model.mean) / model.scale) @ model.coef
    probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50)))
    return probabilities


def best_per_row(scores: np.ndarray, pair_row: np.ndarray, n_rows: int) -> np.ndarray:
    """For each row, the index of its pair with the highest score."""
    order = np.lexsort((-scores, pair_row))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pair_row[order][1:] != pair_row[order][:-1]
    best = np.full(n_rows, -1)
    best[pair_row[order][first]] = order[first]
    return best


def fit_any(data: Dataset, rows: np.ndarray, l2: float, rounds: int = 3) -> LocalFitModel:
    """Fit on the training ``rows`` (a boolean mask), each row represented by its best-scoring reference.

    Round 0 picks by overlap (novel recall + token F1 + cosine); later rounds by the previous model.
    """
    pairs = np.flatnonzero(rows[data.pair_row])
    col = {f: i for i, f in enumerate(FEATURES)}
    scores = data.x[:, col["novel_recall"]] + data.x[:, col["token_f1"]] + data.x[:, col["cosine"]]
    model = None
    for _ in range(rounds):
        best = best_per_row(scores[pairs], data.pair_row[pairs], len(data.y))
        chosen = pairs[best[rows]]
        model = fit_logistic(data.x[chosen][:, _MODEL_COLUMNS], data.y[rows], l2)
        scores = predict(model, data.x)
    assert model is not None
    return model


_CODE = {Fit.FIT: 1, Fit.NO_FIT: 0, Fit.UNSCORABLE: -1}
_BASE = (Fit.FIT, Fit.NO_FIT, Fit.UNSCORABLE)


def rule_outcomes(model: LocalFitModel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the code after the rules for each base decision (columns FIT, NO_FIT, UNSCORABLE), and the
    index of the rule that decides (-1: none)."""
    out = np.zeros((len(x), 3), dtype=int)
    which = np.full(len(x), -1)
    for i, row in enumerate(x):
        signals = dict(zip(FEATURES, row, strict=True))
        for j, base in enumerate(_BASE):
            rule = model.matching_rule(signals, base)
            out[i, j] = _CODE[rule.fit if rule is not None else base]
        fired = [k for k, r in enumerate(model.rules) if signals.get(r.signal, 0.0) >= r.at_least]
        which[i] = fired[0] if fired else -1
    return out, which


@dataclass
class Decisions:
    """Per row: the judge's code (1 FIT, 0 NO_FIT, -1 UNSCORABLE), its best guess, the deciding rule or -1."""

    code: np.ndarray
    guess: np.ndarray
    rule: np.ndarray


def decide_rows(
    model: LocalFitModel, data: Dataset, rows: np.ndarray, outcomes: np.ndarray, which: np.ndarray
) -> Decisions:
    """The judge's decision on each of ``rows`` (a mask): per reference with the rules, then fits any."""
    probs = predict(model, data.x)
    base = np.where(probs >= model.hi, 0, np.where(probs <= model.lo, 1, 2))
    pair_code = outcomes[np.arange(len(probs)), base]
    lean = outcomes[np.arange(len(probs)), np.where(probs >= 0.5, 0, 1)]
    pair_guess = np.where(lean >= 0, lean, probs >= 0.5).astype(int)
    n = len(data.y)
    code = np.zeros(n, dtype=int)
    np.maximum.at(code, data.pair_row, (pair_code == 1).astype(int))
    unsure = np.zeros(n, dtype=int)
    np.maximum.at(unsure, data.pair_row, (pair_code == -1).astype(int))
    code = np.where(code == 1, 1, np.where(unsure == 1, -1, 0))
    guess = np.zeros(n, dtype=int)
    np.maximum.at(guess, data.pair_row, pair_guess)
    deciding = best_per_row(
        np.where(pair_code == 1, 2.0, np.where(pair_code == -1, 1.0, 0.0)) + probs * 0.1, data.pair_row, n
    )
    rule = np.where(deciding >= 0, which[np.maximum(deciding, 0)], -1)
    return Decisions(np.where(rows, code, -2), np.where(rows, guess, -2), np.where(rows, rule, -1))


def choose_band(
    model: LocalFitModel,
    data: Dataset,
    rows: np.ndarray,
    outcomes: np.ndarray,
    which: np.ndarray,
    max_abstain: float,
    chance: float = 0.5,
) -> tuple[float, float]:
    """The widest band ``0.5 +- w`` (``w`` in steps of 0.01) whose rows the best guess gets right at most ``chance``
    of the time ("the signals really disagree"), leaving at most ``max_abstain`` of ``rows`` UNSCORABLE."""
    best = 0.0
    for w in np.arange(0.01, 0.2001, 0.01):
        d = decide_rows(replace(model, lo=0.5 - w, hi=0.5 + w), data, rows, outcomes, which)
        unsure = rows & (d.code == -1)
        if unsure.sum() > max_abstain * rows.sum():
            break
        if unsure.any() and np.mean((d.guess[unsure] == 1) == data.y[unsure]) <= chance:
            best = float(w)
    return round(0.5 - best, 3), round(0.5 + best, 3)


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


def choose_threshold(score: np.ndarray, y: np.ndarray) -> float:
    """The cut-off ``score >= t`` with the best accuracy on these rows."""
    candidates = np.unique(np.concatenate([score, [1.01]]))
    accuracy = [np.mean((score >= t) == y) for t in candidates]
    return float(candidates[int(np.argmax(accuracy))])


@dataclass
class Predictions:
    """Out-of-sample predictions per row: the judge's decisions and the baselines (bools)."""

    judge: Decisions
    recall: np.ndarray
    f1: np.ndarray


def train_and_predict(
    data: Dataset,
    train: np.ndarray,
    test: np.ndarray,
    args: argparse.Namespace,
    outcomes: np.ndarray,
    which: np.ndarray,
    seed: int,
) -> tuple[LocalFitModel, Predictions]:
    """Fit on ``train`` (band by an inner grouped CV on it), predict ``test``; baselines' cut-offs from ``train``."""
    inner = group_folds(data.groups, args.folds, seed=seed)
    lo_hi = []
    for f in range(args.folds):
        fit_rows, val = train & (inner != f), train & (inner == f)
        if not val.any() or not fit_rows.any():
            continue
        lo_hi.append(
            choose_band(fit_any(data, fit_rows, args.l2), data, val, outcomes, which, args.max_unscorable)
        )
    lo, hi = float(np.mean([b[0] for b in lo_hi])), float(np.mean([b[1] for b in lo_hi]))
    model = replace(fit_any(data, train, args.l2), lo=round(lo, 3), hi=round(hi, 3))
    recall = np.zeros(len(data.y), dtype=bool)
    f1 = np.zeros(len(data.y), dtype=bool)
    for name in np.unique(data.source):
        tr, te = train & (data.source == name), test & (data.source == name)
        src = tr if tr.any() else train
        recall[te] = data.recall[te] >= choose_threshold(data.recall[src], data.y[src])
        f1[te] = data.f1[te] >= choose_threshold(data.f1[src], data.y[src])
    return model, Predictions(decide_rows(model, data, test, outcomes, which), recall, f1)


def merge(into: Predictions, part: Predictions, test: np.ndarray) -> None:
    """Copy ``part``'s predictions on ``test`` into ``into``."""
    for a, b in (
        (into.judge.code, part.judge.code),
        (into.judge.guess, part.judge.guess),
        (into.judge.rule, part.judge.rule),
        (into.recall, part.recall),
        (into.f1, part.f1),
    ):
        a[test] = b[test]


def table(data: Dataset, pred: Predictions, rows: np.ndarray) -> str:
    """The Markdown table of one set: accuracy over all rows (UNSCORABLE wrong), coverage, scored, best guess."""
    y = data.y[rows]
    n = int(rows.sum())
    lines = [
        "| method | accuracy, all rows | coverage | accuracy, scored rows | kappa (all rows) |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, pred_fit: np.ndarray, scored: np.ndarray) -> None:
        right = scored & (pred_fit == y)
        acc_all = right.sum() / n
        acc_scored = right.sum() / max(scored.sum(), 1)
        kappa = cohen_kappa(y, pred_fit & scored)
        lines.append(f"| {name} | {acc_all:.3f} | {scored.mean():.3f} | {acc_scored:.3f} | {kappa:.3f} |")

    everything = np.ones(n, dtype=bool)
    row("containment (a gold answer inside the candidate)", data.contain[rows], everything)
    row("token recall >= t (t from the training rows)", pred.recall[rows], everything)
    row("token F1 >= t (t from the training rows)", pred.f1[rows], everything)
    code, guess = pred.judge.code[rows], pred.judge.guess[rows]
    row("**local judge (FIT / NO_FIT / UNSCORABLE)**", code == 1, code >= 0)
    row("local judge, best guess", guess == 1, everything)
    return "\n".join(lines)


def rule_table(model: LocalFitModel, data: Dataset, pred: Predictions, rows: np.ndarray) -> str:
    """How often each rule decided a row, and how often the label agreed."""
    lines = ["| rule | rows decided | label agrees |", "|---|---|---|"]
    for k, rule in enumerate(model.rules):
        hit = rows & (pred.judge.rule == k) & (pred.judge.code >= 0)
        if hit.any():
            agree = np.mean((pred.judge.code[hit] == 1) == data.y[hit])
            lines.append(f"| {rule.signal} -> {rule.fit.value} | {int(hit.sum())} | {agree:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Run the benchmark; write the model fitted on all rows unless ``--no-write``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, action="append", help="a set in the NQ301 layout (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N rows of each set")
    parser.add_argument("--embedder", choices=["use", "e5"], default="use")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument(
        "--max-unscorable", type=float, default=0.03, help="most UNSCORABLE share the band may leave"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    paths = {p.stem.split(".")[0]: p for p in args.data} if args.data else SETS
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        print(f"data not found at {', '.join(missing)}. Fix: pass --data PATH", file=sys.stderr)
        return 2

    started = time.perf_counter()
    rows = [{**r, "set": name} for name, path in paths.items() for r in load_rows(path, args.limit)]
    texts = [t for r in rows for t in (r["candidate"], *r["reference"], r["question"])]
    data = featurise(rows, embed_all(texts, args.embedder))
    zeros = np.zeros(len(FEATURES))
    probe = LocalFitModel(FEATURES, zeros, np.ones(len(FEATURES)), zeros, 0.0, 0.5, 0.5)  # the rules only
    outcomes, which = rule_outcomes(probe, data.x)
    n = len(data.y)
    folds = group_folds(data.groups, args.folds)
    pooled = Predictions(Decisions(*(np.full(n, -2) for _ in range(3))), np.zeros(n, bool), np.zeros(n, bool))
    for f in range(args.folds):
        test = folds == f
        if test.any():
            model, part = train_and_predict(data, ~test, test, args, outcomes, which, seed=f + 1)
            merge(pooled, part, test)
    for name in paths:
        rows_of = data.source == name
        out(
            f"## {name}: {int(rows_of.sum())} rows, {len(np.unique(data.groups[rows_of]))} questions, "
            f"{int(rows_of[data.pair_row].sum())} "
            f"(reference, candidate) pairs; {args.folds}-fold CV grouped by question, both sets pooled\n"
        )
        out(table(data, pooled, rows_of))
        out("\nRules (rows they decided, out of fold):\n")
        out(rule_table(probe, data, pooled, rows_of))
        out("")
    if len(paths) > 1:
        for name in paths:
            test = data.source == name
            model, part = train_and_predict(data, ~test, test, args, outcomes, which, seed=99)
            out(f"## {name}, held out: fitted on the other set only (band lo={model.lo}, hi={model.hi})\n")
            out(table(data, part, test))
            out("")

    everything = np.ones(n, dtype=bool)
    model, _ = train_and_predict(data, everything, everything, args, outcomes, which, seed=7)
    command = "python benchmarks/fit_local_judges.py" + (" " + " ".join(argv) if argv else "")
    meta = {
        "fitted_on": ", ".join(f"{k} ({int((data.source == k).sum())} rows)" for k in paths),
        "l2": args.l2,
        "command": command,
    }
    model = replace(model, embedder=args.embedder, meta=meta)
    out(f"Fitted on all rows: lo={model.lo:.3f}, hi={model.hi:.3f}. Coefficients (standardised):")
    out(", ".join(f"{f} {c:+.2f}" for f, c in zip(model.features, model.coef, strict=True)))
    out(f"Features: {data.ms_per_pair:.2f} ms per (reference, candidate) pair, embeddings aside.")
    if not args.no_write:
        args.output.write_text(json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8")
        out(f"Wrote {args.output}")
    out(f"\nCommand: `{command}` ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
