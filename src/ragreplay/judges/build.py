"""Judges built from a spec: ``local`` (shipped models, no endpoint) or ``provider:model`` (an LLM judge)."""

from __future__ import annotations

from ragreplay.errors import ConfigError
from ragreplay.judges.fit import FitJudge
from ragreplay.ports import Judge, PairwiseJudge
from ragreplay.providers.registry import ModelFactory

LOCAL_FIT_SPECS = ("local", "local:fit", "local:pairwise")
"""Specs that give the local FIT judge (``local:pairwise`` too: its FIT judge is the local one)."""

LOCAL_PAIRWISE_SPECS = ("local", "local:pairwise")
"""Specs that give the local pairwise judge."""


def build_fit_judge(spec: str, factory: ModelFactory) -> Judge:
    """The FIT (agreement) judge for ``spec``: ``local`` (calibrated signals, no model) or an LLM judge."""
    if spec in LOCAL_FIT_SPECS:
        from ragreplay.judges.local_fit import LocalFitJudge

        return LocalFitJudge()
    return FitJudge(factory.build(spec))


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
