"""Records of comparisons and their per-case rows, as the compare layer and the store exchange them.

The store keeps a row's payload as opaque JSON: what a row holds is the compare layer's business.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.runs import RunStatus


class ComparisonRecord(BaseModel):
    """One comparison: what was compared (``config``), on which cases, and how far it got."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_at: datetime
    status: RunStatus
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: str
    dataset_hash: str
    n_cases: int
    finished_at: datetime | None = None


class ComparisonRowRecord(BaseModel):
    """One case judged for one challenger; ``payload`` is the compare layer's JSON for it."""

    model_config = ConfigDict(frozen=True)

    comparison_id: str
    case_id: str
    challenger: str
    payload: dict[str, Any]
