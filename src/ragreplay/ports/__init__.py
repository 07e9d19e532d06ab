"""The seams between the engine and its adapters. The engine only knows these protocols."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.pairwise import PairwiseJudgment, PairwiseSide
from ragreplay.core.runs import ResultRecord, RunStatus
from ragreplay.core.types import Answer, Case, Judgment, Rewrite


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a chat request: a real endpoint, the fake, or a wrapper around either."""

    @property
    def name(self) -> str:
        """``provider:model``, as the user wrote it."""
        ...

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request. Raises :class:`~ragreplay.core.chat.ProviderError` on failure."""
        ...


class Target(Protocol):
    """The RAG under test."""

    @property
    def name(self) -> str:
        """A short label for reports."""
        ...

    @property
    def version(self) -> str:
        """A content hash of the target's configuration, stored on every run."""
        ...

    async def answer(self, question: str, case: Case) -> Answer:
        """Answer ``question`` (the pinned standalone rewrite of ``case.query``)."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources."""
        ...


class Judge(Protocol):
    """Decides whether a new answer fits the old one."""

    @property
    def name(self) -> str:
        """The judge model or local judge, named in every report."""
        ...

    @property
    def prompt_version(self) -> str:
        """Version of the judge prompt, stored on every judgment."""
        ...

    async def judge(self, case: Case, question: str, new_answer: Answer) -> Judgment:
        """Judge one case; an unparseable reply gives ``Fit.UNSCORABLE``, never an exception."""
        ...


class QueryRewriter(Protocol):
    """Turns a follow-up into a standalone question."""

    @property
    def name(self) -> str:
        """The rewriter model or rule, named in every report."""
        ...

    @property
    def prompt_version(self) -> str:
        """Version of the rewrite prompt or rule, stored on every run."""
        ...

    async def rewrite(self, case: Case) -> Rewrite:
        """The standalone question for ``case``; provider failures propagate."""
        ...


class CacheBackend(Protocol):
    """Content-addressed storage of model responses."""

    def cache_get(self, key: str) -> Mapping[str, Any] | None:
        """The stored response for ``key``, or ``None``."""
        ...

    def cache_put(
        self, key: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> None:
        """Store a response (idempotent: a second put with the same key keeps the first)."""
        ...


class PinnedRewrites(Protocol):
    """The store's ``rewrites`` repository, as the replay engine reads it."""

    def get_rewrites(self, case_ids: Sequence[str], rewriter: str | None = None) -> dict[str, Rewrite]:
        """The rewrites ``rewriter`` (``name@prompt_version``) pinned to any of ``case_ids``, by case id."""
        ...


class RunResults(Protocol):
    """The store's ``runs`` repository, as the replay engine uses it."""

    def load_results(self, run_id: str) -> list[ResultRecord]:
        """All result rows of a run."""
        ...

    def iter_results(self, run_id: str, only_started: bool = False) -> Iterator[ResultRecord]:
        """The result rows of a run, streamed; ``only_started`` leaves out the pending ones."""
        ...

    def set_run_status(self, run_id: str, status: RunStatus, finished_at: datetime | None = None) -> None:
        """Move a run to ``status``."""
        ...


class RunStore(Protocol):
    """What the replay engine reads from the store, and the run status it sets."""

    @property
    def runs(self) -> RunResults:
        """Runs and their results."""
        ...

    @property
    def rewrites(self) -> PinnedRewrites:
        """The question pinned to each case."""
        ...


class ResultWriter(Protocol):
    """Where the engine saves each step; a call returns once the write is committed."""

    async def save_result(self, result: ResultRecord) -> None:
        """Upsert one case's result row."""
        ...

    async def pin_rewrite(self, case_id: str, rewrite: Rewrite, rewriter: str) -> Rewrite:
        """Pin ``rewrite`` for ``rewriter`` unless it pinned one already; return the pinned one."""
        ...


class PairwiseJudge(Protocol):
    """Compares two answers to one question, labelled only A and B, and picks one or a tie."""

    @property
    def name(self) -> str:
        """The judge model or local judge, named in every report."""
        ...

    @property
    def prompt_version(self) -> str:
        """Version of the pairwise prompt or model, stored on every judgment."""
        ...

    async def judge(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> PairwiseJudgment:
        """Judge one ordering of a pair; an unparseable reply gives ``winner=None``, never an exception.

        ``reference``: a correct answer to the question when there is one (a reviewer's, a gold answer); the
        judge weighs closeness to it. Callers pass it only when they have one, as a keyword."""
        ...
