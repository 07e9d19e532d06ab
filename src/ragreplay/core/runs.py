"""Records of runs and their per-case results, as the engine and the store exchange them."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.types import Answer, Judgment, Rewrite, Verdict


class RunStatus(StrEnum):
    """Where a run stands. ``running`` with no live process means it was killed: resume it."""

    RUNNING = "running"
    INTERRUPTED = "interrupted"
    DONE = "done"
    FAILED = "failed"


class ResultStatus(StrEnum):
    """Where one case of a run stands."""

    PENDING = "pending"
    DONE = "done"
    ERROR = "error"


class RunRecord(BaseModel):
    """A replay run: what was replayed, against what, judged by what."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_at: datetime
    status: RunStatus
    target_name: str
    target_version: str
    judge_name: str
    judge_prompt_version: str
    rewriter_name: str | None
    rewrite_prompt_version: str | None
    config_hash: str
    dataset_hash: str
    n_cases: int
    config: dict[str, Any] = Field(default_factory=dict)
    finished_at: datetime | None = None


class ResultRecord(BaseModel):
    """One case's progress and outcome within a run. Each step is saved as soon as it completes."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    case_id: str
    status: ResultStatus = ResultStatus.PENDING
    rewrite: Rewrite | None = None
    answer: Answer | None = None
    judgment: Judgment | None = None
    verdict: Verdict | None = None
    error: str | None = None

    def updated(self, **changes: Any) -> ResultRecord:
        """``self.model_copy(update=changes)``, the same copy (``changes`` not validated either) in fewer steps:
        the engine makes two or three a case. A result has no extra fields and no private attributes."""
        fields = self.__dict__.copy()
        fields.update(changes)
        copied = type(self).__new__(type(self))
        _set = object.__setattr__
        _set(copied, "__dict__", fields)
        _set(copied, "__pydantic_extra__", None)
        _set(copied, "__pydantic_fields_set__", self.__pydantic_fields_set__ | changes.keys())
        _set(copied, "__pydantic_private__", None)
        return copied


class SourceRecord(BaseModel):
    """One ingested file. Its id is the hash of its bytes, so ingesting it twice is a no-op."""

    model_config = ConfigDict(frozen=True)

    id: str
    path: str
    format: str
    ingested_at: datetime
    n_conversations: int = 0
    n_cases: int = 0
    n_skipped: int = 0
