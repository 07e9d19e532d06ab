"""What a pairwise judge (local or LLM) is given and what it returns: two sides, 1-5 axis scores and a winner."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragreplay.core.types import RetrievedChunk, TokenUsage

Winner = Literal["A", "B", "tie"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairwiseSide(_Frozen):
    """One answer to judge, with the chunks it was given and, when known, each chunk's document date."""

    answer: str
    contexts: list[RetrievedChunk] = Field(default_factory=list)
    context_dates: dict[str, date] = Field(default_factory=dict)
    """Chunk id -> effective date of the document the chunk comes from."""


DEFAULT_AXIS_NAMES = ("groundedness", "completeness", "directness", "recency")


class AxisScores(BaseModel):
    """One side's scores, each 1 (poor) to 5 (good).

    The four default axes are fields; a judge configured with other axes passes them as extra keyword
    arguments (``AxisScores(groundedness=4, safety=5)``), and a default axis it does not score stays ``None``.
    :meth:`as_dict` gives every scored axis by name.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    groundedness: int | None = Field(None, ge=1, le=5)
    completeness: int | None = Field(None, ge=1, le=5)
    directness: int | None = Field(None, ge=1, le=5)
    recency: int | None = Field(None, ge=1, le=5)

    @model_validator(mode="after")
    def _extra_axes_are_scores(self) -> AxisScores:
        for name, value in (self.model_extra or {}).items():
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
                raise ValueError(f"axis {name!r} must be an integer from 1 to 5, got {value!r}")
        return self

    def as_dict(self) -> dict[str, int]:
        """Every scored axis, default axes first."""
        scores = {n: getattr(self, n) for n in DEFAULT_AXIS_NAMES if getattr(self, n) is not None}
        scores.update(self.model_extra or {})
        return scores


class PairwiseJudgment(_Frozen):
    """A pairwise decision; ``winner`` is ``None`` when the pair could not be scored (``reason`` says why)."""

    winner: Winner | None
    scores_a: AxisScores | None
    scores_b: AxisScores | None
    reason: str
    judge: str
    prompt_version: str
    raw: str = ""
    tokens: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls whose price is unknown: their dollars are not in ``cost_usd`` (see ``core/costs``)."""


def swap_winner(winner: Winner | None) -> Winner | None:
    """The same decision seen with the two sides swapped (A <-> B; tie and ``None`` stay)."""
    if winner == "A":
        return "B"
    if winner == "B":
        return "A"
    return winner
