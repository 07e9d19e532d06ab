"""The shadow: the champion answers the user; challengers answer the same question off the user's path.

On the champion's path the shadow only counts, asks the sampler, and creates background tasks: it never
awaits a challenger or the store there, and never redacts there either: large texts are redacted in the
:class:`~ragreplay.shadow.offload.Offload` worker process, small ones inline in the background task.
Challengers run with a timeout; whatever they do (answer, fail, hang) ends up as a :class:`ShadowRow` handed
to the :class:`ShadowLog`, and nothing is raised to the caller.

Users' GOOD/BAD on the champion's answers comes back later through :meth:`Shadow.feedback`, keyed by the
request id the caller gave :meth:`Shadow.handle` (or :meth:`Shadow.record`); it is queued to a
:class:`FeedbackLog` the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Protocol, cast, runtime_checkable

from ragreplay.core.shadow import FeedbackSource, ShadowAnswer, ShadowFeedback, ShadowRow, live_case
from ragreplay.core.types import Answer, Case, Feedback
from ragreplay.errors import ConfigError
from ragreplay.ingest.feedback import FeedbackValueError, parse_feedback
from ragreplay.ports import Target
from ragreplay.shadow.log import FeedbackLog, ShadowLog
from ragreplay.shadow.offload import Offload, portable
from ragreplay.shadow.privacy import (
    REDACTION_FAILED,
    Redactor,
    default_redactor,
    hash_user_id,
    redact_or_mark,
    redact_texts,
    resolve_salt,
)

logger = logging.getLogger(__name__)

_DEFAULT = object()
NOT_REDACTED = "[not stored: the shadow closed before this text was redacted]"
"""Stored for a long text whose redaction was still running when the shadow was closed."""
MAX_REQUEST_ID = 128
"""Longer request ids (from a client header, say) are stored as their SHA-256, the same way everywhere."""


def normalize_request_id(value: str) -> str:
    """``value`` stripped; one longer than :data:`MAX_REQUEST_ID` becomes ``sha256:<hex>``. ``ValueError`` when
    empty."""
    value = value.strip()
    if not value:
        raise ValueError("a request id must not be empty")
    if len(value) > MAX_REQUEST_ID:
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()
    return value


class SamplingPolicy(Protocol):
    """Decides whether one live request is shadowed (e.g. :class:`ragreplay.shadow.sampler.Sampler`)."""

    def decide(self, user_id: str | None, now: datetime | None = None) -> bool:
        """``True`` when this request should also go to the challengers."""
        ...


class AlwaysSample:
    """Shadows every request."""

    def decide(self, user_id: str | None, now: datetime | None = None) -> bool:
        """Always ``True``."""
        return True


@dataclass(frozen=True)
class ShadowStats:
    """The shadow's counters: requests seen and sampled, requests dropped because too many challengers were
    in flight, challenger errors and timeouts, the log's row counters and the feedback log's counters."""

    seen: int
    sampled: int
    dropped: int
    in_flight: int
    challenger_errors: int
    challenger_timeouts: int
    rows_offered: int
    rows_written: int
    rows_dropped: int
    rows_lost: int
    rows_pending: int
    feedback_offered: int = 0
    feedback_written: int = 0
    feedback_dropped: int = 0
    feedback_lost: int = 0
    rows_made_storable: int = 0
    """Rows written with a NUL or lone surrogate replaced (see ``ragreplay.core.storable``)."""

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for JSON and logs)."""
        return asdict(self)


@dataclass(frozen=True)
class RawRequest:
    """The user's request as the challengers get it: method, path (with query), body bytes, content type."""

    method: str
    path: str
    body: bytes
    content_type: str | None


@runtime_checkable
class RequestForwarder(Protocol):
    """A challenger that can be sent the user's own request rather than only the question (an HTTP app)."""

    async def forward(self, raw: RawRequest, question: str, case: Case) -> Answer:
        """Answer the user's request ``raw``; ``question`` and ``case`` are what was read from it."""
        ...


class _Request:
    """One sampled request; its stored (redacted) query and champion answer, user hash and case are computed
    off the user's path, once for all challengers."""

    def __init__(
        self,
        shadow: Shadow,
        query: str,
        champion: ShadowAnswer,
        user_id: str | None,
        tags: Mapping[str, str] | None,
        case: Case | None,
        request_id: str,
        raw: RawRequest | None = None,
    ) -> None:
        self.id = request_id
        self.raw = raw
        self.ts = datetime.now(UTC)
        self.query = query
        self.champion = champion
        self.user_id = user_id
        self.tags = dict(tags or {})
        self._case = case
        self._shadow = shadow
        self._stored: asyncio.Task[tuple[str, ShadowAnswer]] | None = None
        self._stored_inline: tuple[str, ShadowAnswer] | None = None

    @cached_property
    def light(self) -> bool:
        """Whether the query and the champion's answer are short enough to redact on the loop."""
        shadow = self._shadow
        return not (shadow._heavy(self.query) or shadow._heavy_side(self.champion))

    @cached_property
    def case(self) -> Case:
        return (
            self._case if self._case is not None else live_case(self.id, self.query, self.user_id, self.tags)
        )

    @cached_property
    def user_hash(self) -> str | None:
        if self.user_id is None:
            return None
        if not self._shadow.hash_user_ids:
            return self.user_id
        return hash_user_id(self.user_id, self._shadow.salt)

    async def stored(self) -> tuple[str, ShadowAnswer]:
        """The query and the champion's answer as they may be stored (redacted), computed once."""
        if self._stored is None:
            self._stored = asyncio.ensure_future(self._redact_both())
        # shielded: one challenger's task being cancelled must not cancel the others' redaction
        return await asyncio.shield(self._stored)

    def stored_now(self) -> tuple[str, ShadowAnswer]:
        """The same, now (for the row of a task being cancelled); a text too long to redact on the loop is
        replaced by :data:`NOT_REDACTED` then, rather than hold up the close."""
        done = self._stored is not None and self._stored.done() and not self._stored.cancelled()
        if done and self._stored is not None and self._stored.exception() is None:
            return self._stored.result()
        if self._stored_inline is not None:
            return self._stored_inline
        shadow = self._shadow
        if self.light:  # the same for every challenger: redacted once
            self._stored_inline = shadow._redacted(self.query), shadow._redacted_side(self.champion)
            return self._stored_inline
        query = NOT_REDACTED if shadow._heavy(self.query) else shadow._redacted(self.query)
        champion = self.champion
        if shadow._heavy(champion.text) or shadow._heavy(champion.error or ""):
            champion = champion.model_copy(
                update={"text": NOT_REDACTED, "error": champion.error and NOT_REDACTED}
            )
        if shadow._heavy_chunks(champion):
            champion = champion.model_copy(
                update={"chunk_texts": [t and NOT_REDACTED for t in champion.chunk_texts]}
            )
        return query, shadow._redacted_side(champion)

    async def _redact_both(self) -> tuple[str, ShadowAnswer]:
        query = await self._shadow._redacted_later(self.query)
        return query, await self._shadow._redacted_side_later(self.champion)


class Shadow:
    """Sends live requests to the champion and, when sampled, to every challenger in the background.

    ``redact`` defaults to :func:`~ragreplay.shadow.privacy.default_redactor` and is applied to the query, both
    answers, error messages and feedback comments before anything is stored (``None`` stores them as they
    are); user ids are hashed with ``salt`` (or ``RAGREPLAY_SHADOW_SALT``) unless ``hash_user_ids`` is
    off. Without a ``log`` rows are built and counted but not kept. The shadow does not close the targets.
    Feedback goes to ``feedback_log``; by default a :class:`FeedbackLog` on the ``log``'s store. Texts too
    large to redact on the event loop are redacted by ``offload`` (by default an :class:`Offload` of its own,
    closed with the shadow; one passed in is the caller's to close).
    """

    def __init__(
        self,
        champion: Target,
        challengers: Mapping[str, Target],
        sampler: SamplingPolicy | None = None,
        log: ShadowLog | None = None,
        redact: Redactor | None = default_redactor,
        hash_user_ids: bool = True,
        salt: str = "",
        challenger_timeout_s: float = 30.0,
        max_in_flight: int = 100,
        feedback_log: FeedbackLog | None = None,
        offload: Offload | None = None,
    ) -> None:
        if challenger_timeout_s <= 0:
            raise ConfigError(f"shadow challenger_timeout_s must be > 0, got {challenger_timeout_s}.")
        if max_in_flight < max(1, len(challengers)):
            raise ConfigError(
                f"shadow max_in_flight is {max_in_flight} but there are {len(challengers)} challenger(s): "
                "no request could ever be shadowed. Fix: set max_in_flight to at least the number of "
                "challengers (default 100)."
            )
        self.champion = champion
        self.challengers = dict(challengers)
        self.sampler: SamplingPolicy = sampler if sampler is not None else AlwaysSample()
        self.log = log
        if feedback_log is None and log is not None:
            feedback_log = FeedbackLog(log.store)
        self.feedback_log = feedback_log
        self.redact = redact
        self.offload = offload if offload is not None else Offload()
        self._own_offload = offload is None
        # a redactor that cannot be sent to the worker process (a closure) runs in its thread instead
        self._redact_in_process = redact is not None and portable(redact)
        self.hash_user_ids = hash_user_ids
        keeper = log.store.secrets.get_or_create if log is not None and hash_user_ids else None
        self.salt, self.salt_source = resolve_salt(salt, keeper)
        if hash_user_ids:
            logger.info("shadow: user ids hashed with the salt from %s", self.salt_source)
        self.timeout_s = challenger_timeout_s
        self.max_in_flight = max_in_flight
        self._tasks: set[asyncio.Task[None]] = set()
        # isinstance against a runtime Protocol walks its attributes each time (~25 µs): asked once per target
        self._forwards: dict[int, tuple[Target, bool]] = {}
        self._abandoned: set[asyncio.Task[Answer]] = set()  # timed-out calls still running
        self.seen = 0
        self.sampled = 0
        self.dropped = 0
        self.challenger_errors = 0
        self.challenger_timeouts = 0
        self.rows_built = 0

    async def handle(
        self,
        query: str,
        user_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """The champion's answer to ``query``, returned as soon as it is ready.

        A champion exception propagates unchanged (nothing is shadowed then). When the request is sampled,
        the challengers answer it in background tasks. Pass your own ``request_id`` (e.g. the id of the
        message the user sees) to attach the user's feedback later with :meth:`feedback`.
        """
        rid = _request_id(request_id)
        case = live_case(rid, query, user_id, tags)
        start = time.perf_counter()
        answer = await self.champion.answer(query, case)
        measured_ms = (time.perf_counter() - start) * 1000
        self._record(query, answer, user_id, tags, case, measured_ms, rid)
        return answer

    def record(
        self,
        query: str,
        champion_answer: Answer,
        user_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        request_id: str | None = None,
        admitted: bool = False,
        raw: RawRequest | None = None,
    ) -> None:
        """Shadow a request whose champion answer the caller already has; returns at once, never raises.

        Must be called from inside a running event loop (the challengers run as tasks on it). ``admitted``:
        :meth:`admit` already counted and sampled this request. ``raw``: the user's request itself, sent as
        it is to challengers that can take it (:class:`RequestForwarder`); others get the question.
        """
        try:
            rid = _request_id(request_id)
        except ValueError:
            rid = uuid.uuid4().hex
        self._record(query, champion_answer, user_id, tags, None, None, rid, admitted, raw)

    def admit(self, user_id: str | None) -> bool:
        """Count a request and ask the sampler whether it is shadowed, before any work is done for it.

        For an admitted request pass ``admitted=True`` to :meth:`record`, or call :meth:`withdraw` when it
        cannot be shadowed after all; a request not admitted needs nothing more. Never raises.
        """
        try:
            self.seen += 1
            if not self.challengers or not self.sampler.decide(user_id):
                return False
        except Exception:  # a broken sampling policy must not reach the user's path
            logger.exception("shadow: the sampler failed; request not shadowed")
            return False
        self.sampled += 1
        return True

    def withdraw(self) -> None:
        """An admitted request could not be shadowed after all (e.g. its bodies could not be read)."""
        self.sampled -= 1

    def drop(self) -> None:
        """An admitted request is not shadowed after all because the shadow was closed or too busy for it:
        counted in ``dropped``."""
        self.dropped += 1

    def feedback(
        self,
        request_id: str,
        label: Feedback | str | bool | int | float,
        comment: str | None = None,
        source: FeedbackSource = "api",
        at: datetime | None = None,
    ) -> bool:
        """Queue the user's GOOD/BAD on the champion's answer to ``request_id``; returns at once.

        ``label`` is read like feedback in logs (``good``, ``thumbs_down``, ``True``, ``1``, ``0`` ...). A later
        label for the same request replaces an earlier one. ``comment`` is redacted like queries. Returns
        ``False`` when there is nothing to keep (no feedback log, or a label meaning "no feedback") or the
        queue dropped it; raises ``ValueError`` for an empty request id or a label that is not feedback.
        """
        rid = normalize_request_id(request_id)
        try:
            value = label if isinstance(label, Feedback) else parse_feedback(label)
        except FeedbackValueError as exc:
            raise ValueError(str(exc)) from None
        if value is None or self.feedback_log is None:
            return False
        item = ShadowFeedback(
            request_id=rid,
            feedback=value,
            ts=at or datetime.now(UTC),
            comment=None if comment is None else self._redacted(comment),
            source=source,
        )
        return self.feedback_log.offer(item)

    def _redacted_side(self, side: ShadowAnswer) -> ShadowAnswer:
        """``side`` with its answer text, chunk texts and error message redacted (an error can quote the
        user's text; a chunk can hold a customer's record)."""
        if self.redact is None:
            return side
        update: dict[str, Any] = {"text": self._redacted(side.text)} if side.text else {}
        if side.error:
            update["error"] = self._redacted(side.error)
        if side.chunk_texts:
            update["chunk_texts"] = self._logged(*redact_texts(self.redact, side.chunk_texts))
        return _updated(side, update)

    @staticmethod
    def _logged(texts: list[str | None], error: str | None) -> list[str | None]:
        if error is not None:
            logger.warning("shadow redactor failed on a chunk (%s); its text not stored", error)
        return texts

    def _redacted(self, text: str) -> str:
        if self.redact is None:
            return text
        redacted, error = redact_or_mark(self.redact, text)
        if error is not None:
            logger.warning("shadow redactor failed (%s); text not stored", error)
        return redacted

    def _heavy(self, text: str) -> bool:
        return self.redact is not None and self.offload.heavy(len(text))

    def _heavy_chunks(self, side: ShadowAnswer) -> bool:
        return self.redact is not None and self.offload.heavy(sum(len(t or "") for t in side.chunk_texts))

    def _heavy_side(self, side: ShadowAnswer) -> bool:
        return self._heavy(side.text) or self._heavy(side.error or "") or self._heavy_chunks(side)

    async def _redacted_later(self, text: str) -> str:
        """``text`` redacted: inline when short, else in the offload worker (never on the loop for long)."""
        if self.redact is None or not self.offload.heavy(len(text)):
            return self._redacted(text)
        try:
            redacted, error = await self.offload.run(
                redact_or_mark, self.redact, text, in_process=self._redact_in_process
            )
        except Exception as exc:  # the worker died: never store the raw text
            redacted, error = REDACTION_FAILED, f"the redaction worker failed: {exc!r}"
        if error is not None:
            logger.warning("shadow redactor failed (%s); text not stored", error)
        return redacted

    async def _redacted_side_later(self, side: ShadowAnswer) -> ShadowAnswer:
        """:meth:`_redacted_side`, off the loop for long texts."""
        if self.redact is None:
            return side
        update: dict[str, Any] = {"text": await self._redacted_later(side.text)} if side.text else {}
        if side.error:
            update["error"] = await self._redacted_later(side.error)
        if side.chunk_texts:
            update["chunk_texts"] = await self._redacted_chunks_later(side.chunk_texts)
        return _updated(side, update)

    async def _redacted_chunks_later(self, texts: list[str | None]) -> list[str | None]:
        """Chunk texts redacted: inline when short in all, else in the offload worker."""
        if self.redact is None:
            return texts
        if not self.offload.heavy(sum(len(t or "") for t in texts)):
            return self._logged(*redact_texts(self.redact, texts))
        try:
            redacted, error = await self.offload.run(
                redact_texts, self.redact, texts, in_process=self._redact_in_process
            )
        except Exception as exc:  # the worker died: never store the raw text
            redacted = [t and REDACTION_FAILED for t in texts]
            error = f"the redaction worker failed: {exc!r}"
        return self._logged(redacted, error)

    def _record(
        self,
        query: str,
        answer: Answer,
        user_id: str | None,
        tags: Mapping[str, str] | None,
        case: Case | None,
        measured_ms: float | None,
        request_id: str,
        admitted: bool = False,
        raw: RawRequest | None = None,
    ) -> None:
        if not admitted and not self.admit(user_id):
            return
        try:
            if len(self._tasks) + len(self.challengers) > self.max_in_flight:
                self.dropped += 1
                return
            champion = ShadowAnswer.from_answer(answer, measured_ms)
            request = _Request(self, query, champion, user_id, tags, case, request_id, raw)
            for name, target in self.challengers.items():
                task = asyncio.create_task(self._challenge(request, name, target))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except Exception:  # the shadow must never change the user's path
            self.dropped += 1
            logger.exception("shadow: could not start the challengers; request not shadowed")

    async def _challenge(self, request: _Request, name: str, target: Target) -> None:
        start = time.perf_counter()
        try:
            candidate = await self._ask(request, target, start)
            if request.light and not self._heavy_side(candidate):
                # short texts are redacted inline: no tasks, no shield, no gather (most requests)
                (query, champion), challenger = request.stored_now(), self._redacted_side(candidate)
            else:
                (query, champion), challenger = await asyncio.gather(
                    request.stored(), self._redacted_side_later(candidate)
                )
        except asyncio.CancelledError:
            failed = ShadowAnswer.failed("cancelled: the shadow was closed", _ms(start))
            query, champion = request.stored_now()
            self._offer(request, name, query, champion, self._redacted_side(failed))
            raise
        self._offer(request, name, query, champion, challenger)

    async def _ask(self, request: _Request, target: Target, start: float) -> ShadowAnswer:
        if request.raw is not None and self._can_forward(target):
            asked = cast(RequestForwarder, target).forward(request.raw, request.query, request.case)
        else:
            asked = target.answer(request.query, request.case)
        call = asyncio.create_task(asked)
        try:
            # asyncio.wait, not wait_for: a challenger that ignores cancellation must not hold the row back.
            done, _ = await asyncio.wait({call}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            self._abandon(call)
            raise
        if not done:
            self._abandon(call)
            self.challenger_timeouts += 1
            return ShadowAnswer.failed(f"timeout after {self.timeout_s:g} s", _ms(start))
        try:
            answer = call.result()
        except Exception as exc:
            self.challenger_errors += 1
            return ShadowAnswer.failed(f"{type(exc).__name__}: {exc}", _ms(start))
        if answer.error is not None:
            self.challenger_errors += 1
        return ShadowAnswer.from_answer(answer, _ms(start))

    def _can_forward(self, target: Target) -> bool:
        """Whether ``target`` takes the user's own request (:class:`RequestForwarder`), remembered per target."""
        known = self._forwards.get(id(target))
        if known is None or known[0] is not target:  # the target is kept, so its id is not reused meanwhile
            known = (target, isinstance(target, RequestForwarder))
            self._forwards[id(target)] = known
        return known[1]

    def _abandon(self, call: asyncio.Task[Answer]) -> None:
        call.cancel()
        self._abandoned.add(call)  # keep a reference until it really ends
        call.add_done_callback(self._forget)

    def _forget(self, call: asyncio.Task[Answer]) -> None:
        self._abandoned.discard(call)
        if not call.cancelled():
            call.exception()  # mark it retrieved: an abandoned challenger's failure is no news

    def _offer(
        self, request: _Request, name: str, query: str, champion: ShadowAnswer, challenger: ShadowAnswer
    ) -> None:
        """Build the row from the stored (redacted) texts and hand it to the log."""
        try:
            row = ShadowRow(
                ts=request.ts,
                request_id=request.id,
                query=query,
                user_hash=request.user_hash,
                tags=request.tags,
                challenger=name,
                champion_answer=champion,
                challenger_answer=challenger,
            )
        except Exception:
            logger.exception("shadow: could not build a row for challenger %s", name)
            return
        self.rows_built += 1
        if self.log is not None:
            self.log.offer(row)

    def stats(self) -> ShadowStats:
        """The counters now."""
        log = self.log.stats() if self.log is not None else None
        fb = self.feedback_log.stats() if self.feedback_log is not None else None
        return ShadowStats(
            seen=self.seen,
            sampled=self.sampled,
            dropped=self.dropped,
            in_flight=len(self._tasks),
            challenger_errors=self.challenger_errors,
            challenger_timeouts=self.challenger_timeouts,
            rows_offered=log.offered if log else self.rows_built,
            rows_written=log.written if log else 0,
            rows_dropped=log.dropped if log else 0,
            rows_lost=log.lost if log else 0,
            rows_pending=log.pending if log else 0,
            feedback_offered=fb.offered if fb else 0,
            feedback_written=fb.written if fb else 0,
            feedback_dropped=fb.dropped if fb else 0,
            feedback_lost=fb.lost if fb else 0,
            rows_made_storable=log.made_storable if log else 0,
        )

    async def aclose(self, timeout_s: float = 10.0, log_timeout_s: float = 5.0) -> None:
        """Wait up to ``timeout_s`` for challengers in flight (the rest are cancelled and recorded as
        such), then flush and close the log within ``log_timeout_s``."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        if self.log is not None:
            await self.log.aclose(log_timeout_s)
        if self.feedback_log is not None:
            await self.feedback_log.aclose(log_timeout_s)
        if self._own_offload:
            self.offload.close()


def _request_id(given: str | None) -> str:
    return uuid.uuid4().hex if given is None else normalize_request_id(given)


def _updated(side: ShadowAnswer, update: dict[str, Any]) -> ShadowAnswer:
    """``side`` with ``update`` applied; ``side`` itself when nothing in it changes (no copy made)."""
    if all(getattr(side, key) == value for key, value in update.items()):
        return side
    return side.model_copy(update=update)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000
