"""The whole `ragreplay compare` job: build the judges and targets, answer and judge every case, summarise."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ragreplay.compare.runner import CaseCallback, ComparisonSetup, compare_cases
from ragreplay.compare.summary import ComparisonSummary, build_summary
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.judges.position import OrderMode
from ragreplay.ports import Judge, PairwiseJudge, Target
from ragreplay.providers.registry import ModelFactory
from ragreplay.service import build_judge
from ragreplay.targets.loader import load_target

LOCAL_PAIRWISE_SPECS = ("local", "local:pairwise")

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def build_pairwise_judge(spec: str, factory: ModelFactory) -> PairwiseJudge:
    """The pairwise judge for ``spec``: ``local`` (no model) or a ``provider:model`` LLM judge."""
    if spec in LOCAL_PAIRWISE_SPECS:
        from ragreplay.judges.local_pairwise import LocalPairwiseJudge

        return LocalPairwiseJudge()
    try:
        from ragreplay.judges.pairwise import LLMPairwiseJudge
    except ImportError as exc:  # pragma: no cover - only while the LLM pairwise judge is not installed
        raise ConfigError(
            f"--judge {spec}: the LLM pairwise judge is not available in this build ({exc}). Fix: use --judge local"
        ) from exc
    return LLMPairwiseJudge(factory.build(spec))


def default_fit_judge(judge_spec: str) -> str:
    """The FIT judge that goes with a pairwise judge spec: ``local`` with ``local``, else the same model."""
    return "local" if judge_spec in LOCAL_PAIRWISE_SPECS else judge_spec


def build_fit_judge(spec: str, factory: ModelFactory) -> Judge:
    """The agreement (FIT) judge for ``spec``."""
    return build_judge("local" if spec in LOCAL_PAIRWISE_SPECS else spec, factory)


def parse_challengers(values: Sequence[str]) -> dict[str, Path]:
    """``["a=cand_a.yaml", "cand_b.yaml"]`` -> ``{"a": Path("cand_a.yaml"), "cand_b": Path("cand_b.yaml")}``."""
    named: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            name, path = Path(value).stem, value
        name = name.strip()
        if not _NAME.match(name) or name == "champion":
            raise ConfigError(
                f"--challenger {value!r}: the name {name!r} must be letters, digits, '.', '_' or '-' and not "
                "'champion'. Fix: --challenger NAME=PATH, e.g. --challenger a=cand_a.yaml"
            )
        if name in named:
            raise ConfigError(
                f"--challenger {value!r}: the name {name!r} is used twice. Fix: give each a name"
            )
        named[name] = Path(path.strip())
    if not named:
        raise ConfigError("no challenger given. Fix: --challenger NAME=PATH (repeatable)")
    return named


def load_targets(champion: Path, challengers: Mapping[str, Path]) -> tuple[Target, dict[str, Target]]:
    """Build the champion and every challenger target from their YAML files."""
    return load_target(champion), {name: load_target(path) for name, path in challengers.items()}


async def run_comparison(
    *,
    factory: ModelFactory,
    champion: Target,
    challengers: Mapping[str, Target],
    judge_spec: str,
    fit_judge_spec: str,
    cases: Sequence[Case],
    questions: Mapping[str, str],
    cases_label: str,
    order: OrderMode = "both",
    seed: int | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
) -> ComparisonSummary:
    """Answer and judge ``cases`` with every side and return the summary; targets are closed at the end."""
    pairwise = build_pairwise_judge(judge_spec, factory)
    fit_judge = build_fit_judge(fit_judge_spec, factory)
    setup = ComparisonSetup(
        champion=champion,
        challengers=challengers,
        pairwise=pairwise,
        fit_judge=fit_judge,
        order=order,
        seed=seed,
        concurrency=concurrency,
    )
    try:
        outcome = await compare_cases(setup, cases, questions, on_case)
    finally:
        for target in (champion, *challengers.values()):
            await target.aclose()
    return build_summary(
        champion=champion.name,
        challenger_names=list(challengers),
        rows=outcome.rows,
        outcomes=outcome.outcomes,
        judge=pairwise.name,
        judge_prompt_version=pairwise.prompt_version,
        fit_judge=fit_judge.name,
        order=order,
        cases=cases_label,
        n_cases=len(cases),
        generators=outcome.generators,
        seed=seed,
        judge_specs=[judge_spec, fit_judge_spec],
    )
