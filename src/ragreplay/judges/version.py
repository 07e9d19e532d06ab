"""The version of a pairwise judge, the one way every stored judgment names the judge that made it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragreplay.core.judge_version import JudgeVersion, judge_version
from ragreplay.ports import PairwiseJudge


@runtime_checkable
class Versioned(Protocol):
    """A judge that exposes its prompt template text and its axes (both shipped pairwise judges do)."""

    @property
    def prompt_text(self) -> str:
        """The prompt template text (for a local judge, its fitted model as text)."""
        ...

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The axes it scores."""
        ...


def version_of(judge: PairwiseJudge) -> JudgeVersion:
    """``judge``'s version: name, model, sha256 of the prompt template text, axes. A judge that does not expose
    its prompt (a test double) is versioned by its ``prompt_version`` string and scores no named axis."""
    if isinstance(judge, Versioned):
        text, axes = judge.prompt_text, judge.axis_names
    else:
        text, axes = judge.prompt_version, ()
    return judge_version(judge.name, judge.name, text, axes, judge.prompt_version)
