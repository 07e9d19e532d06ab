"""What a pairwise judge (local or LLM) is given and what it returns: two sides, four 1-5 axes and a winner."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.types import RetrievedChunk

Winner = Literal["A", "B", "tie"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairwiseSide(_Frozen):
    """One answer to judge, with the chunks it was given and, when known, each chunk's document date."""

    answer: str
    contexts: list[RetrievedChunk] = Field(default_factory=list)
    context_dates: dict[str, date] = Field(default_factory=dict)
    """Chunk id -> effective date of the document the chunk comes from."""


class AxisScores(_Frozen):
    """One side's scores, each 1 (poor) to 5 (good)."""

    groundedness: int = Field(ge=1, le=5)
    completeness: int = Field(ge=1, le=5)
    directness: int = Field(ge=1, le=5)
    recency: int = Field(ge=1, le=5)


class PairwiseJudgment(_Frozen):
    """A pairwise decision; ``winner`` is ``None`` when the pair could not be scored (``reason`` says why)."""

    winner: Winner | None
    scores_a: AxisScores | None
    scores_b: AxisScores | None
    reason: str
    judge: str
    prompt_version: str
    raw: str = ""


def swap_winner(winner: Winner | None) -> Winner | None:
    """The same decision seen with the two sides swapped (A <-> B; tie and ``None`` stay)."""
    if winner == "A":
        return "B"
    if winner == "B":
        return "A"
    return winner
