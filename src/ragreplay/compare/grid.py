"""The report-ready summary of a comparison: the grid of champion vs each challenger, rows and warnings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.compare.checks import same_family_warnings
from ragreplay.core.compare_stats import ChallengerSummary, CompareRow, PositionFigures, summarize_challenger
from ragreplay.core.failure_tags import FailureTags
from ragreplay.judges.position import OrderMode, PairOutcome, position_stats


class ComparisonSummary(BaseModel):
    """Everything a comparison report shows."""

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    champion: str
    challengers: list[ChallengerSummary]
    judge: str
    judge_prompt_version: str
    fit_judge: str
    order: OrderMode
    seed: int | None = None
    cases: str
    n_cases: int
    warnings: list[str]
    rows: list[CompareRow]
    failure_tags: dict[str, FailureTags] | None = None
    """Per challenger, the failure tags reviewers gave its rows (the shadow report); ``None`` when not looked
    up (a comparison on labelled cases has no reviews)."""


def build_summary(
    *,
    champion: str,
    challenger_names: Sequence[str],
    rows: Sequence[CompareRow],
    outcomes: Mapping[str, Sequence[PairOutcome]],
    judge: str,
    judge_prompt_version: str,
    fit_judge: str,
    order: OrderMode,
    cases: str,
    n_cases: int,
    generators: Mapping[str, str] | None = None,
    seed: int | None = None,
    comparison_id: str | None = None,
    judge_specs: Sequence[str] | None = None,
) -> ComparisonSummary:
    """Summarise per-case rows and pair outcomes into the grid, with hygiene and order-mode warnings.

    ``judge_specs``: the judges' model specs for the same-family check (default: ``judge`` and ``fit_judge``).
    """
    summaries = []
    for name in challenger_names:
        mine = [r for r in rows if r.challenger == name]
        pairs = outcomes.get(name, [])
        position = PositionFigures.model_validate(position_stats(pairs).model_dump()) if pairs else None
        summaries.append(summarize_challenger(name, mine, position))
    return assemble_summary(
        champion=champion,
        summaries=summaries,
        rows=rows,
        judge=judge,
        judge_prompt_version=judge_prompt_version,
        fit_judge=fit_judge,
        order=order,
        cases=cases,
        n_cases=n_cases,
        generators=generators,
        seed=seed,
        comparison_id=comparison_id,
        judge_specs=judge_specs,
    )


def assemble_summary(
    *,
    champion: str,
    summaries: Sequence[ChallengerSummary],
    rows: Sequence[CompareRow],
    judge: str,
    judge_prompt_version: str,
    fit_judge: str,
    order: OrderMode,
    cases: str,
    n_cases: int,
    generators: Mapping[str, str] | None = None,
    seed: int | None = None,
    comparison_id: str | None = None,
    judge_specs: Sequence[str] | None = None,
) -> ComparisonSummary:
    """The summary of challengers already summarised (from rows, or from rollups with ``rows`` empty), with
    the hygiene and order-mode warnings."""
    warnings = same_family_warnings(judge_specs or [judge, fit_judge], generators or {})
    if order == "random":
        warnings.append(
            "the pairwise judge ran in single random order mode: one ordering per pair, so order consistency "
            "is not measured and position bias is only balanced on average. Use --order both to measure it"
        )
    wrong = sum(s.champion_wrong_language + s.challenger_wrong_language for s in summaries)
    if wrong:
        warnings.append(
            f"hygiene.wrong_language: {wrong} answer(s) are not in the language of the question; judges "
            "tend to under-penalise this, see the wrong-language counts"
        )
    for s in summaries:
        warnings.extend(s.warnings)
    return ComparisonSummary(
        id=comparison_id,
        champion=champion,
        challengers=list(summaries),
        judge=judge,
        judge_prompt_version=judge_prompt_version,
        fit_judge=fit_judge,
        order=order,
        seed=seed,
        cases=cases,
        n_cases=n_cases,
        warnings=warnings,
        rows=list(rows),
    )
