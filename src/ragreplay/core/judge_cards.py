"""What each local judge was measured to reach on human-labelled dev data, and what it cannot tell: the card
every report, compare and gate shows beside a verdict that such a judge decided.

The figures are dev figures (the same public sets chose the judges' features and thresholds; cross-validated
where docs/local_judges.md says so) and are copied from there; each card names the command that produced them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeCard:
    """A local judge's measured dev accuracy and coverage for its task, next to the best simple baseline on
    the same rows, and its known blind spots."""

    judge: str
    task: str
    dataset: str
    accuracy: float
    """Over all rows: an abstention (UNSCORABLE, no winner) counts as wrong."""
    coverage: float
    """Share of rows it decided."""
    baseline: str
    baseline_accuracy: float
    cannot_tell: str
    command: str

    def summary(self) -> str:
        """One sentence with the figures: ``measured on ... (dev): accuracy 0.73 over all rows ...``."""
        return (
            f"{self.judge} ({self.task}) measured on {self.dataset} (dev): accuracy {self.accuracy:.3f} over all "
            f"rows (abstentions count as wrong), coverage {self.coverage:.2f}; best simple baseline on the same "
            f"rows, {self.baseline}: {self.baseline_accuracy:.3f}. It cannot tell {self.cannot_tell}."
        )


CARDS: tuple[JudgeCard, ...] = (
    JudgeCard(
        judge="local:fit",
        task="does the new answer fit the old one",
        dataset=(
            "answer-fit-nq301, question-grouped 5-fold cross-validation over it and answer-fit-evouna-nq-dev "
            "(there: 0.905 against 0.882, coverage 0.985)"
        ),
        accuracy=0.805,
        coverage=0.987,
        baseline="token F1 with a cut-off chosen on the training folds",
        baseline_accuracy=0.780,
        cannot_tell=(
            "a paraphrase that contradicts the old answer without a changed number, date, name, role or "
            "permission word, nor a correct answer worded with other facts; its rules for roles, permissions, "
            "partial answers and translations were only checked on hand-made cases"
        ),
        command="python benchmarks/fit_local_judges.py",
    ),
    JudgeCard(
        judge="local:pairwise",
        task="which of two answers is better, or a tie",
        dataset=(
            "pairwise-pandalm, 5-fold cross-validation, 3-way accuracy (on RAG answers, pairwise-ragchecker-dev, "
            "question-grouped 5-fold cross-validation, pairs the annotators decided, a tie said counts as wrong: "
            "0.736 with a reference answer against 0.755 for the answer closer to it by token F-score, "
            "0.577 without one against 0.596 for the longer answer)"
        ),
        accuracy=0.660,
        coverage=1.0,
        baseline="the longer answer wins",
        baseline_accuracy=0.611,
        cannot_tell=(
            "which answer is right: without a reference answer it reads grounding in its own chunks, length "
            "and form, so a longer or fluent wrong answer can win; with one it reads word overlap with it, so a right "
            "answer in other words can lose; on sets it was not tuned on it measured at or below the simple "
            "baselines"
        ),
        command="python benchmarks/pairwise_local_judge.py",
    ),
)


def card_for(judge_name: str) -> JudgeCard | None:
    """The card of a local judge by the name it reports (``local:fit``, ``local:pairwise``; ``local`` alone is
    the FIT judge), or ``None`` for any other judge."""
    name = "local:fit" if judge_name == "local" else judge_name
    return next((c for c in CARDS if c.judge == name), None)
