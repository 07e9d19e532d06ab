"""A scoring rubric for the rubric judge: named criteria, each with a description, what a score of 1, 3 and 5
means (2 and 4 optional) and an optional weight for the weighted overall score.

Criterion names become metric names (``rubric.<name>``) and keys of the judge's reply, so they are short
lowercase identifiers; every text has a length limit, so a rubric cannot blow up the prompt. The rubric's
``version`` is the hash of its content: part of the judge's prompt version, so changing a rubric never reuses
old replies nor resumes an old run.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from ragreplay.core.ids import content_hash

MAX_CRITERIA = 12
"""At most this many criteria: all of them are scored in one judge call."""
MAX_DESCRIPTION = 500
"""Characters in a criterion's description."""
MAX_LEVEL = 300
"""Characters in the text of one score level."""
REQUIRED_LEVELS = (1, 3, 5)
"""The score levels every criterion must describe; 2 and 4 may be described too."""
OVERALL = "overall"
"""The weighted mean of the criteria's normalised scores is the metric ``rubric.overall``: not a criterion name."""
METRIC_PREFIX = "rubric."
"""A criterion's metric is ``rubric.<name>``."""

CriterionName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class RubricCriterion(BaseModel):
    """One criterion: scored 1-5 by the judge with a short reasoning."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: CriterionName
    description: Annotated[Text, StringConstraints(max_length=MAX_DESCRIPTION)]
    scores: dict[int, Annotated[Text, StringConstraints(max_length=MAX_LEVEL)]]
    weight: float = Field(default=1.0, gt=0, le=100)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name == OVERALL:
            raise ValueError(
                f"'{OVERALL}' is the weighted score of all criteria; name the criterion otherwise"
            )
        return name

    @field_validator("scores")
    @classmethod
    def _levels(cls, scores: dict[int, str]) -> dict[int, str]:
        outside = sorted(k for k in scores if not 1 <= k <= 5)
        if outside:
            raise ValueError(f"score levels are 1 to 5, not {outside}")
        missing = [k for k in REQUIRED_LEVELS if k not in scores]
        if missing:
            raise ValueError(
                f"say what {', '.join(map(str, missing))} mean{'s' if len(missing) == 1 else ''}"
            )
        return dict(sorted(scores.items()))

    @field_validator("weight")
    @classmethod
    def _finite(cls, weight: float) -> float:
        if not math.isfinite(weight):
            raise ValueError("the weight must be a finite number")
        return weight

    @property
    def metric(self) -> str:
        """The criterion's metric name."""
        return METRIC_PREFIX + self.name


class Rubric(BaseModel):
    """A named list of criteria, all scored in one judge call per row."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[Text, StringConstraints(max_length=80)] = "rubric"
    criteria: tuple[RubricCriterion, ...] = Field(min_length=1, max_length=MAX_CRITERIA)

    @model_validator(mode="after")
    def _unique_names(self) -> Rubric:
        names = [c.name for c in self.criteria]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"criterion names must be unique: {', '.join(twice)} repeated")
        return self

    @property
    def version(self) -> str:
        """The hash of the rubric's content (names, descriptions, levels, weights)."""
        return content_hash(self.model_dump(mode="json"), 12)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the rubric adds: one per criterion, then ``rubric.overall``."""
        return (*(c.metric for c in self.criteria), METRIC_PREFIX + OVERALL)

    def overall(self, scores: dict[str, float]) -> float | None:
        """The weighted mean of the criteria's normalised scores (``None`` unless every criterion has one)."""
        if any(c.name not in scores for c in self.criteria):
            return None
        total = sum(c.weight for c in self.criteria)
        return sum(c.weight * scores[c.name] for c in self.criteria) / total


def normalised(score: int) -> float:
    """A 1-5 score as 0-1: ``(score - 1) / 4``, as answer relevance."""
    return (score - 1) / 4


def raw_score(value: float) -> float:
    """A normalised 0-1 score back on the 1-5 scale."""
    return 1 + 4 * value
