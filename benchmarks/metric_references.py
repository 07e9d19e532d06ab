"""How often each lexical metric equals its reference implementation on real answer pairs (docs/eval.md's figures).

The pairs are the dev sets' (candidate answer, gold answer) pairs of ``answer-fit-nq301`` and
``answer-fit-evouna-nq-dev`` (``shared/data``, found as ``tests/shared_data.py`` finds it: beside the checkout,
then ``$RAGREPLAY_SHARED_DATA``), each candidate against each of its gold answers, and per row against all of them
(the best, as the SQuAD script's ``metric_max_over_ground_truths`` and rouge-score's ``score_multi`` take it).

- ``token_f1`` / ``exact_match`` against torchmetrics' SQuAD functions, which implement the official script's
  normalisation (``tests/squad_reference.py``; needs torchmetrics: ``pip install torch==2.13.0 torchmetrics``);
  equal means within 1e-6 (torchmetrics computes in float32), and a pair whose answers both normalise to nothing
  is counted equal when ragreplay gives v1.1's 0 (torchmetrics gives v2.0's 1);
- ``rouge_l(tokenizer="rouge-score")`` and ``rouge_l`` (the Unicode tokenizer) against rouge-score's
  ``RougeScorer(["rougeL"])``;
- ``token_f1_multilingual`` / ``exact_match_multilingual`` (the local judges' normalisation) against the same
  SQuAD figures: how often the variant differs from the standard.

Otherwise equal means equal floats (``==``), not close ones.

    python benchmarks/metric_references.py
    python benchmarks/metric_references.py --limit 500 --data /path/to/shared/data
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragreplay.metrics.lexical import (
    exact_match,
    exact_match_multilingual,
    rouge_l,
    token_f1,
    token_f1_multilingual,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import shared_data  # noqa: E402  (tests/shared_data.py: where the data lies, its rows)
import squad_reference  # noqa: E402  (tests/squad_reference.py: torchmetrics' SQuAD functions)


@dataclass
class Agreement:
    """One comparison over the pairs and over the rows: how many scored the same as the reference."""

    name: str
    reference: str
    pairs: int = 0
    pairs_equal: int = 0
    rows: int = 0
    rows_equal: int = 0
    pairs_ascii: int = 0
    """Pairs whose two texts are plain ASCII."""
    pairs_ascii_equal: int = 0
    tolerance: float = 0.0
    """How far apart two figures may be and count as equal (torchmetrics' F1 is float32: 1e-6)."""

    def same(self, ours: float, theirs: float) -> bool:
        """Whether two figures count as equal."""
        return abs(ours - theirs) <= self.tolerance

    def add(self, equal: bool, ascii_only: bool) -> None:
        """Count one pair."""
        self.pairs += 1
        self.pairs_equal += equal
        self.pairs_ascii += ascii_only
        self.pairs_ascii_equal += equal and ascii_only

    def add_row(self, equal: bool) -> None:
        """Count one row (a candidate against all its gold answers)."""
        self.rows += 1
        self.rows_equal += equal


Score = Callable[[str, Sequence[str]], float]


def _rouge_reference() -> Callable[[str, Sequence[str]], float]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])

    def score(candidate: str, references: Sequence[str]) -> float:
        return float(scorer.score_multi(list(references), candidate)["rougeL"].fmeasure)

    return score


def _squad(metric: Any) -> Score:
    def score(candidate: str, references: Sequence[str]) -> float:
        if all(squad_reference.both_empty(candidate, r) for r in references):
            return 0.0 if metric is squad_reference.f1_score else 1.0  # v1.1's figures for "nothing left"
        return float(squad_reference.metric_max_over_ground_truths(metric, candidate, list(references)))

    return score


def comparisons() -> list[tuple[Agreement, Score, Score]]:
    """(counts, ragreplay's score, the reference's score) for every comparison, in the order printed."""
    squad_f1, squad_em = _squad(squad_reference.f1_score), _squad(squad_reference.exact_match_score)
    rouge = _rouge_reference()
    return [
        (Agreement("token_f1", "SQuAD f1 (torchmetrics)", tolerance=1e-6), token_f1, squad_f1),
        (Agreement("exact_match", "SQuAD exact match (torchmetrics)"), exact_match, squad_em),
        (
            Agreement('rouge_l(tokenizer="rouge-score")', "rouge-score RougeScorer(['rougeL'])"),
            lambda c, r: rouge_l(c, r, tokenizer="rouge-score"),
            rouge,
        ),
        (Agreement("rouge_l (unicode, the default)", "rouge-score RougeScorer(['rougeL'])"), rouge_l, rouge),
        (
            Agreement("token_f1_multilingual", "SQuAD f1 (torchmetrics)", tolerance=1e-6),
            token_f1_multilingual,
            squad_f1,
        ),
        (
            Agreement("exact_match_multilingual", "SQuAD exact match (torchmetrics)"),
            exact_match_multilingual,
            squad_em,
        ),
    ]


def measure(rows: Sequence[Any]) -> list[Agreement]:
    """Every comparison over ``rows`` (``tests/shared_data.AnswerRow``: candidate, references)."""
    checks = comparisons()
    for row in rows:
        for reference in row.references:
            ascii_only = row.candidate.isascii() and reference.isascii()
            for counts, ours, theirs in checks:
                counts.add(
                    counts.same(float(ours(row.candidate, [reference])), theirs(row.candidate, [reference])),
                    ascii_only,
                )
        for counts, ours, theirs in checks:
            counts.add_row(
                counts.same(float(ours(row.candidate, row.references)), theirs(row.candidate, row.references))
            )
    return [counts for counts, _, _ in checks]


def first_rows(rows: Sequence[Any], limit: int) -> list[Any]:
    """The first ``limit`` rows of each set (all of them with 0)."""
    if not limit:
        return list(rows)
    kept: list[Any] = []
    seen: dict[str, int] = {}
    for row in rows:
        seen[row.source] = seen.get(row.source, 0) + 1
        if seen[row.source] <= limit:
            kept.append(row)
    return kept


def table(results: Sequence[Agreement]) -> str:
    """The figures as a markdown table."""
    lines = [
        "| metric | reference | pairs equal | rows equal | ASCII pairs equal |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| `{r.name}` | {r.reference} | {r.pairs_equal:,} of {r.pairs:,} | {r.rows_equal:,} of {r.rows:,} "
            f"| {r.pairs_ascii_equal:,} of {r.pairs_ascii:,} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; 2 when the data is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=None, help="the shared/data folder (default: found)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N rows of each set (0: all)")
    args = parser.parse_args(argv)
    folder = args.data or shared_data.shared_data()
    if folder is None or not all((folder / f).exists() for f in shared_data.ANSWER_FIT):
        where = args.data or " or ".join(str(p) for p in shared_data.candidates())
        print(f"answer-fit data not found at {where} (set {shared_data.ENV} or pass --data)", file=sys.stderr)
        return 2
    rows = first_rows(shared_data.answer_rows(folder), args.limit)
    sources = sorted({r.source for r in rows})
    print(f"{len(rows):,} rows ({', '.join(sources)}); equal = the same float (F1: within 1e-6, float32)\n")
    print(table(measure(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
