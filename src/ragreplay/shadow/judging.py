"""Judging the shadow log after the fact: agreement and blind preference of each new row, and the report grid.

Each unjudged row is judged once: the FIT judge compares the challenger's answer with the champion's (agreement)
and the pairwise judge compares both blind (champion = ``x``, challenger = ``y``). The judgment is saved and the
row marked judged in one transaction, so a re-run picks up only rows added since. The report rebuilds
:class:`CompareRow` objects from the stored judgments and rows and reuses the comparison summary and renderers.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from ragreplay.compare.case_comparison import side_of
from ragreplay.compare.checks import expected_language, is_wrong_language
from ragreplay.compare.grid import ComparisonSummary, build_summary
from ragreplay.core.compare_stats import CompareRow, Preferred
from ragreplay.core.costs import total_cost
from ragreplay.core.gc_pause import gc_paused
from ragreplay.core.shadow import ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.jobs.claims import DEFAULT_LEASE_S, ClaimFeed, StoreQueue
from ragreplay.jobs.runner import JobPlan, Progress, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.position import OrderMode, PairOutcome, SideWinner, judge_pair
from ragreplay.judges.version import version_of
from ragreplay.ports import Judge, PairwiseJudge, ShadowJudgingStore
from ragreplay.store.work_claims import SHADOW_JUDGE_QUEUE, ClaimBatch, WorkClaimsRepository

_AGE = re.compile(r"^\s*(\d+)\s*([dhm])\s*$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
_PREFERRED: dict[SideWinner, Preferred] = {"x": "champion", "y": "challenger", "tie": "tie"}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """``7d``, ``24h``, ``30m`` (that long before ``now``) or an ISO date/datetime (UTC when naive)."""
    now = now or datetime.now(UTC)
    match = _AGE.match(value)
    if match:
        try:
            return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        except (OverflowError, ValueError):
            raise ConfigError(
                f"--since {value!r} reaches back past year 1. Fix: use a smaller age, e.g. 365d, or a date"
            ) from None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(
            f"--since {value!r} is not an age or a date. Fix: use e.g. 7d, 24h, 30m or 2026-11-01"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


@dataclass(frozen=True)
class ShadowJudges:
    """The two judges, the order mode and the optional seed of the random order mode."""

    pairwise: PairwiseJudge
    fit_judge: Judge
    order: OrderMode = "both"
    seed: int | None = None
    specs: tuple[str, str] = ("", "")
    """The pairwise and FIT judges' specs as given (for the same-family check in the report)."""


def _fatal(exc: BaseException) -> bool:
    return not isinstance(exc, Exception) or isinstance(exc, RagreplayError)


async def judge_row(judges: ShadowJudges, row: ShadowRow, at: datetime) -> ShadowJudgmentRecord:
    """Judge one row. A side that failed, or a judge that raised, is recorded on the record, never raised
    (except cancellation and user errors)."""
    record: dict[str, Any] = {
        "row_id": row.id,
        "challenger": row.challenger,
        "judged_at": at,
        "judge": judges.pairwise.name,
        "judge_prompt_version": judges.pairwise.prompt_version,
        "fit_judge": judges.fit_judge.name,
        "fit_judge_prompt_version": judges.fit_judge.prompt_version,
    }
    payload: dict[str, Any] = {
        "order": judges.order,
        "judge_specs": list(judges.specs),
        "judge_version": version_of(judges.pairwise).id,
    }
    failed = [
        f"{n}: {s.error}"
        for n, s in (("champion", row.champion_answer), (row.challenger, row.challenger_answer))
        if s.error
    ]
    if failed:
        return ShadowJudgmentRecord(**record, error="; ".join(failed), payload=payload)
    payload["wrong_language"] = list(wrong_language(row))
    no_dates: dict[str, date] = {}
    rng = random.Random(f"{judges.seed}:{row.id}") if judges.seed is not None else random.Random()
    fit_task = judges.fit_judge.judge(row.to_case(), row.query, row.challenger_answer.to_answer())
    pair_task = judge_pair(
        judges.pairwise,
        row.query,
        side_of(row.champion_answer.to_answer(), no_dates),
        side_of(row.challenger_answer.to_answer(), no_dates),
        judges.order,
        rng,
    )
    judgment, outcome = await asyncio.gather(fit_task, pair_task, return_exceptions=True)
    reasons: list[str] = []
    fit = Fit.UNSCORABLE
    if isinstance(judgment, BaseException):
        if _fatal(judgment):
            raise judgment
        reasons.append(f"FIT judge failed: {type(judgment).__name__}: {judgment}")
    else:
        fit = judgment.fit
        if judgment.reason:
            reasons.append(judgment.reason)
    winner: SideWinner | None = None
    consistent: bool | None = None
    if isinstance(outcome, BaseException):
        if _fatal(outcome):
            raise outcome
        reasons.append(f"pairwise judge failed: {type(outcome).__name__}: {outcome}")
    else:
        winner, consistent = outcome.winner, outcome.consistent
        payload["outcome"] = outcome.model_dump(mode="json")
        reasons += [j.reason for _, j in outcome.judgments if j.reason]
    payload["reason"] = " | ".join(reasons)
    calls = [j for _, j in outcome.judgments] if isinstance(outcome, PairOutcome) else []
    fit_call = None if isinstance(judgment, BaseException) else judgment
    payload["cost_usd"], payload["unpriced_calls"] = total_cost([fit_call, *calls])
    return ShadowJudgmentRecord(**record, fit=fit, winner=winner, consistent=consistent, payload=payload)


def wrong_language(row: ShadowRow) -> tuple[bool, bool]:
    """Whether the champion's and the challenger's answers are not in the question's language (the report's
    hygiene check), kept with the judgment so the rollups count it."""
    return answers_in_wrong_language(
        row.query, row.tags, row.champion_answer.text, row.challenger_answer.text
    )


def answers_in_wrong_language(
    question: str, tags: Mapping[str, str], champion: str, challenger: str
) -> tuple[bool, bool]:
    """Whether each answer is not in the language expected for ``question`` (see :func:`wrong_language`)."""
    expected = _expected_language(question, tags.get("language", ""))
    return is_wrong_language(champion, expected), is_wrong_language(challenger, expected)


@dataclass
class ShadowJudgingJob:
    """Judging shadow rows as a job of the one runner: each row judged once and saved through the writer,
    its judged mark in the same transaction."""

    judges: ShadowJudges
    writer: StoreWriter
    on_row: Callable[[ShadowJudgmentRecord], None] | None = None

    async def run_one(self, row: ShadowRow) -> ShadowJudgmentRecord:
        """Judge one row and save the judgment; returns once it is committed."""
        record = await judge_row(self.judges, row, datetime.now(UTC))
        await self.writer.save_shadow_judgments([record])
        if self.on_row is not None:
            self.on_row(record)
        return record

    def count(self, progress: Progress, result: ShadowJudgmentRecord) -> None:
        """A row with a failed side counts as an error; the judges' dollars and unpriced calls are added."""
        progress.errors += result.error is not None
        progress.cost_usd += float(result.payload.get("cost_usd", 0.0))
        progress.unpriced_calls += int(result.payload.get("unpriced_calls", 0))


async def judge_shadow(
    store: ShadowJudgingStore,
    writer: StoreWriter,
    judges: ShadowJudges,
    since: datetime | None = None,
    limit: int | None = None,
    concurrency: int = 8,
    on_row: Callable[[ShadowJudgmentRecord], None] | None = None,
    shared: SharedJudging | None = None,
) -> Progress:
    """Judge the unjudged rows with ``ts >= since`` (at most ``limit``), oldest first, read page by page;
    ``on_row`` is called as each row's judgment is saved. ``done`` counts the rows judged, ``errors`` those
    that could not be because a side failed. With ``shared``, the rows are claimed from the store as one of
    several workers (each row judged by one of them; ``done`` counts this worker's)."""
    total = store.shadow_judgments.count_unjudged_shadow_rows(since)
    progress = Progress(total=total if limit is None else min(total, limit))
    job = ShadowJudgingJob(judges, writer, on_row)
    if shared is not None:
        feed = shared_feed(shared, since, limit, concurrency)
        return await run_job(job, JobPlan(todo=(), progress=progress, feed=feed), concurrency)
    rows = store.shadow_rows.iter_shadow_rows(since=since, unjudged_only=True, limit=limit)
    return await run_job(job, JobPlan(todo=rows, progress=progress, read_ahead=True), concurrency)


@dataclass(frozen=True)
class SharedJudging:
    """This process as one worker of several judging the same store's rows (``shadow judge --workers``):
    rows are claimed from ``claims`` under leases of ``lease_s`` seconds, as ``worker``."""

    claims: WorkClaimsRepository
    worker: str
    lease_s: float = DEFAULT_LEASE_S


def shared_feed(
    shared: SharedJudging, since: datetime | None, limit: int | None, concurrency: int
) -> ClaimFeed[ShadowRow]:
    """The feed of unjudged rows with ``ts >= since`` claimed by ``shared.worker``, a batch of about
    ``concurrency`` at a time, at most ``limit`` rows."""
    claims, worker, lease_s = shared.claims, shared.worker, shared.lease_s

    def claim(n: int, after: Any) -> ClaimBatch[ShadowRow]:
        return claims.claim_shadow_rows(worker, n, lease_s, since=since, after=after)

    queue = StoreQueue(claims, SHADOW_JUDGE_QUEUE, worker, claim, key=lambda row: row.id)
    return ClaimFeed(queue, batch=max(8, concurrency), lease_s=lease_s, limit=limit)


def compare_row(row: ShadowRow, record: ShadowJudgmentRecord, feedback: Feedback | None = None) -> CompareRow:
    """The comparison row of a judged shadow row: figures from the row, decisions from the judgment, and the
    user's ``feedback`` on the champion's answer when there is some."""
    return _Collector().compare_row(row, record, feedback)


def compare_rows() -> Callable[[ShadowRow, ShadowJudgmentRecord, Feedback | None], CompareRow]:
    """A :func:`compare_row` that remembers language checks across the rows it is given (for a stream)."""
    return _Collector().compare_row


def _names(values: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(values)) or "-"


LANGUAGE_CACHE = 4096
"""Answers whose language check is remembered while summarising (a request's champion answer is shared by the
rows of its challengers)."""


class _Collector:
    """The inputs of :func:`build_summary` gathered one judged row at a time. ``texts=False`` keeps no answer,
    question, reason or judge reply: only what the figures need."""

    def __init__(self, texts: bool = True) -> None:
        self.texts = texts
        self.rows: list[CompareRow] = []
        self.outcomes: dict[str, list[PairOutcome]] = {}
        self.challengers: set[str] = set()
        self.judges: dict[str, None] = {}
        self.prompt_versions: dict[str, None] = {}
        self.fit_judges: dict[str, None] = {}
        self.orders: set[str] = set()
        self.specs: dict[str, None] = {}
        self.requests: set[str] = set()
        self.row_requests: list[str] = []
        """The request id of each of :attr:`rows`."""
        self._expected = lru_cache(maxsize=LANGUAGE_CACHE)(_expected_language)
        self._wrong = lru_cache(maxsize=LANGUAGE_CACHE)(is_wrong_language)

    def compare_row(
        self, row: ShadowRow, record: ShadowJudgmentRecord, feedback: Feedback | None
    ) -> CompareRow:
        """The comparison row of one judged row (see :func:`compare_row`)."""
        expected = self._expected(row.query, row.tags.get("language", ""))
        texts = self.texts
        return CompareRow(
            case_id=row.id,
            challenger=row.challenger,
            question=row.query if texts else "",
            tags=dict(row.tags),
            champion_answer=row.champion_answer.text if texts else "",
            challenger_answer=row.challenger_answer.text if texts else "",
            agreement=record.fit,
            preference=None if record.winner is None else _PREFERRED[record.winner],
            consistent=record.consistent,
            champion_latency_ms=row.champion_answer.latency_ms,
            challenger_latency_ms=row.challenger_answer.latency_ms,
            champion_cost_usd=row.champion_answer.cost_usd,
            challenger_cost_usd=row.challenger_answer.cost_usd,
            champion_unpriced_calls=row.champion_answer.unpriced_calls,
            challenger_unpriced_calls=row.challenger_answer.unpriced_calls,
            champion_wrong_language=self._wrong(row.champion_answer.text, expected),
            challenger_wrong_language=self._wrong(row.challenger_answer.text, expected),
            error=record.error,
            reason=str(record.payload.get("reason", "")) if texts else "",
            feedback=feedback,
        )

    def add(self, row: ShadowRow, record: ShadowJudgmentRecord, feedback: Feedback | None) -> None:
        """Take in one judged row."""
        self.rows.append(self.compare_row(row, record, feedback))
        payload = record.payload
        if payload.get("outcome") is not None:
            outcome = PairOutcome.model_validate(payload["outcome"])
            if not self.texts:
                outcome = _without_texts(outcome)
            self.outcomes.setdefault(record.challenger, []).append(outcome)
        self.challengers.add(record.challenger)
        self.judges[record.judge] = None
        self.prompt_versions[record.judge_prompt_version] = None
        self.fit_judges[record.fit_judge] = None
        self.orders.add(str(payload.get("order", "both")))
        for spec in payload.get("judge_specs", []):
            if spec:
                self.specs[spec] = None
        self.requests.add(row.request_id)
        self.row_requests.append(row.request_id)

    def summary(self, label: str) -> ComparisonSummary:
        """The comparison grid of the rows taken in."""
        return build_summary(
            champion="champion",
            challenger_names=sorted(self.challengers),
            rows=self.rows,
            outcomes=self.outcomes,
            judge=_names(self.judges),
            judge_prompt_version=_names(self.prompt_versions),
            fit_judge=_names(self.fit_judges),
            order="random" if "random" in self.orders else "both",
            cases=label,
            n_cases=len(self.requests),
            judge_specs=list(self.specs) or None,
        )


def _expected_language(question: str, language_tag: str) -> str | None:
    # expected_language reads only the ``language`` tag, so this is keyed on it alone (for the cache)
    return expected_language(question, {"language": language_tag} if language_tag else {})


def _without_texts(outcome: PairOutcome) -> PairOutcome:
    return outcome.model_copy(
        update={
            "judgments": [(o, j.model_copy(update={"reason": "", "raw": ""})) for o, j in outcome.judgments]
        }
    )


def shadow_summary(
    judged: Iterable[tuple[ShadowRow, ShadowJudgmentRecord]],
    label: str,
    feedback: Mapping[str, Feedback] | None = None,
) -> ComparisonSummary:
    """The comparison grid per challenger from stored judgments and their rows (``label`` names the window);
    ``feedback`` maps request ids to the user's label on the champion's answer."""
    labels = feedback or {}
    collector = _Collector()
    with gc_paused():
        for row, record in judged:
            collector.add(row, record, labels.get(row.request_id))
        return collector.summary(label)


def shadow_figures(store: ShadowJudgingStore, start: datetime, label: str) -> ComparisonSummary:
    """The figures of the judged rows with ``ts >= start`` with the users' feedback on those requests: the
    numbers of :func:`shadow_summary` over ``store.shadow_judgments.load_shadow_judgments(start)``, but read
    as a stream and with rows that hold no question, answer, reason or judge reply, so memory does not grow
    with the texts. For pages that show figures only; the JSON report, which lists the rows whole, needs
    :func:`shadow_summary`."""
    collector = _Collector(texts=False)
    with gc_paused():
        for row, record in store.shadow_judgments.iter_shadow_judgments(start):
            collector.add(row, record, None)
        stored = store.shadow_feedback.shadow_feedback_for(collector.requests)
        if stored:
            collector.rows = [
                r.model_copy(update={"feedback": stored[req].feedback}) if req in stored else r
                for r, req in zip(collector.rows, collector.row_requests, strict=True)
            ]
        return collector.summary(label)


def stored_shadow_summary(store: ShadowJudgingStore, start: datetime) -> ComparisonSummary:
    """The report of the judged rows with ``ts >= start``, with the users' feedback on those requests."""
    judged = store.shadow_judgments.load_shadow_judgments(start)
    stored = store.shadow_feedback.shadow_feedback_for(row.request_id for row, _ in judged)
    labels = {request_id: item.feedback for request_id, item in stored.items()}
    return shadow_summary(judged, f"shadow rows since {start:%Y-%m-%d %H:%M} UTC", labels)
