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
