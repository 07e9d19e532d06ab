"""The seams between the engine and its adapters. The engine only knows these protocols."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.comparisons import ComparisonRecord, ComparisonRowRecord
from ragreplay.core.pairwise import PairwiseJudgment, PairwiseSide
from ragreplay.core.runs import ResultRecord, RunStatus
from ragreplay.core.shadow import ShadowFeedback, ShadowJudgmentRecord, ShadowRow
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


class SharedRateLimit(Protocol):
    """A provider's request rate shared with other processes (the workers of one job, through the store)."""

    async def acquire(self, provider: str, requests_per_minute: float) -> None:
        """Wait until one more request to ``provider`` fits its shared limit of ``requests_per_minute``."""
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


class StoredComparisons(Protocol):
    """The store's ``comparisons`` repository, as the compare layer uses it."""

    def create_comparison(self, record: ComparisonRecord) -> None:
        """Store a new comparison; a ``StoreError`` if its id is taken."""
        ...

    def get_comparison(self, id_or_prefix: str) -> ComparisonRecord | None:
        """The comparison with this id or unique id prefix."""
        ...

    def find_comparison(
        self, config_hash: str, dataset_hash: str, unfinished_only: bool = False
    ) -> ComparisonRecord | None:
        """The newest comparison of this configuration on this dataset."""
        ...

    def set_comparison_status(
        self, comparison_id: str, status: RunStatus, finished_at: datetime | None = None
    ) -> None:
        """Set a comparison's status and ``finished_at`` (``None`` clears it)."""
        ...

    def load_comparison_rows(
        self, comparison_id: str, case_ids: Sequence[str] | None = None
    ) -> list[ComparisonRowRecord]:
        """A comparison's rows (only those of ``case_ids`` when given)."""
        ...

    def comparison_row_keys(self, comparison_id: str) -> set[tuple[str, str]]:
        """The (case id, challenger) pairs a comparison has rows for."""
        ...


class ComparisonStore(Protocol):
    """What a comparison reads from the store and the status it sets (its rows go through the writer)."""

    @property
    def comparisons(self) -> StoredComparisons:
        """Comparisons and their rows."""
        ...


class UnjudgedShadowRows(Protocol):
    """The store's ``shadow_rows`` repository, as shadow judging reads it."""

    def iter_shadow_rows(
        self, since: datetime | None = None, unjudged_only: bool = False, limit: int | None = None
    ) -> Iterator[ShadowRow]:
        """Rows with ``ts >= since``, oldest first, only unjudged ones with ``unjudged_only``, at most
        ``limit``, read in pages."""
        ...


class StoredShadowJudgments(Protocol):
    """The store's ``shadow_judgments`` repository, as shadow judging and its report read it."""

    def count_unjudged_shadow_rows(self, since: datetime | None = None) -> int:
        """How many rows with ``ts >= since`` are not judged yet."""
        ...

    def load_shadow_judgments(
        self, since: datetime | None = None
    ) -> list[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """Every judged row with ``ts >= since`` with its judgment, oldest first."""
        ...

    def iter_shadow_judgments(
        self, since: datetime | None = None
    ) -> Iterator[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """What :meth:`load_shadow_judgments` returns, streamed."""
        ...


class ShadowFeedbackLookup(Protocol):
    """The store's ``shadow_feedback`` repository, as the shadow report reads it."""

    def shadow_feedback_for(self, request_ids: Iterable[str]) -> dict[str, ShadowFeedback]:
        """The users' feedback on those requests, by request id."""
        ...


class ShadowJudgingStore(Protocol):
    """What shadow judging and its report read from the store (judgments are saved through the writer)."""

    @property
    def shadow_rows(self) -> UnjudgedShadowRows:
        """The shadow log's rows."""
        ...

    @property
    def shadow_judgments(self) -> StoredShadowJudgments:
        """Their judgments."""
        ...

    @property
    def shadow_feedback(self) -> ShadowFeedbackLookup:
        """The users' feedback on the champion's answers."""
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
