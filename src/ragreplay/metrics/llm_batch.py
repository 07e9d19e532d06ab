"""Several rows' claims checks in one call: ``ragreplay eval --rows-per-call N``.

The claims check of :mod:`ragreplay.metrics.llm` costs one call per row. With ``N`` above 1, rows waiting for
their check are grouped, up to ``N`` at a time, into one request: every row's question, answer, contexts and
reference fenced as in the one-row prompt, each row inside a ``<checked_row n="k">`` block (the tag is a
protocol tag, so data cannot close or forge it), and one JSON object asked back, ``{"rows": [...]}``, holding one
row's reply object per row with its number. Each row's metrics are read from its own object by the same rules as
a one-row reply; a row the reply leaves out or garbles is undetermined ("unreadable reply"), never given
another row's figures. A group that gets only one row (the run's last, or a slow trickle) is sent with the
one-row prompt, so it shares the one-row cache.

What batching trades: fewer requests and fewer prompt words per row (the instructions are sent once per call),
which counts where an endpoint limits requests per minute; against that, a row's check shares the judge's
attention with the other rows of its call, and which rows share a call depends on timing, so a row's figures can
differ from its one-row check. The default stays one row per call.

Accounting: a batched call's tokens, cost and latency are booked on its first row (``calls`` 1); the other rows
of the call carry ``calls`` 0 and a response with none, so the run's totals count each call once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.eval import EvalRow
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.judges.structured import structured_prompt_version, structured_request, structured_system
from ragreplay.metrics.llm import (
    EXAMPLE_REPLY,
    FENCED_TAGS,
    SYSTEM_PROMPT,
    ClaimsReply,
    LLMScores,
    UnreadableReply,
    counts_of,
    fenced_row,
    for_repeat,
    row_hints,
    row_metrics,
    score_row,
    unreadable,
)
from ragreplay.ports import ChatModel

BATCH_TASK = "claims_batch"
"""The request's task: the fake model answers it from the hints (:mod:`ragreplay.providers.fake`)."""

ROW_TAG = "checked_row"
"""The block one row sits in (a protocol tag of :mod:`ragreplay.judges.fence`)."""

MAX_ROWS_PER_CALL = 16
"""``--rows-per-call`` above this is refused: the reply would grow past what a judge answers reliably."""

LINGER_S = 0.005
"""How long a group that is not full waits for more rows before its call is sent."""


class BatchRowReply(ClaimsReply):
    """One row's reply object in a batched reply: the one-row reply plus the row's number."""

    row: int


class BatchReply(BaseModel):
    """The batched reply's shape."""

    model_config = ConfigDict(extra="forbid")

    rows: list[BatchRowReply]


BATCH_RULES = f"""
Several rows are shown, each inside a <{ROW_TAG} n="k"> block numbered from 1, with its own question, answer, \
contexts and reference. Check every row on its own, from its own blocks only: never let one row's material \
count for another. Reply with one JSON object whose "rows" list holds one object per row, in the order shown, \
each with "row" (its number) and the fields of the example below."""

_BATCH_EXAMPLE = {"rows": [{"row": 1, **EXAMPLE_REPLY}]}
_BATCH_FENCED = (*FENCED_TAGS, ROW_TAG)
BATCH_SCHEMA: dict[str, Any] = BatchReply.model_json_schema()
BATCH_SYSTEM = SYSTEM_PROMPT.replace("\n{rules}\n", "\n{rules}" + BATCH_RULES + "\n", 1)
BATCH_USER_HEAD = "List and check the claims of the answer in each row."
ROW_TEMPLATE = '<{tag} n="{n}">\n{question}\n\n{answer}\n\n{contexts}\n\n{reference}\n</{tag}>'
BATCH_PROMPT_VERSION = structured_prompt_version(
    "claims-batch-1", BATCH_SYSTEM, BATCH_USER_HEAD + ROW_TEMPLATE, _BATCH_EXAMPLE, BATCH_SCHEMA
)
"""Part of the cache key of a batched request (a changed prompt never reuses old replies)."""


@cache
def batch_system_prompt() -> str:
    """The system message of a batched request (built once)."""
    return structured_system(BATCH_SYSTEM, _BATCH_FENCED, "check", _BATCH_EXAMPLE)


def build_batch_request(rows: Sequence[EvalRow], repeat: int = 0) -> ChatRequest:
    """The one request that checks every row of ``rows`` (numbered from 1 in this order)."""
    blocks = [ROW_TEMPLATE.format(tag=ROW_TAG, n=n, **fenced_row(row)) for n, row in enumerate(rows, start=1)]
    user = BATCH_USER_HEAD + "\n\n" + "\n\n".join(blocks) + "\n\nReply with the JSON object only."
    return structured_request(
        system=batch_system_prompt(),
        user=user,
        schema_name="claims_check_rows",
        schema=BATCH_SCHEMA,
        prompt_version=for_repeat(BATCH_PROMPT_VERSION, repeat),
        task=BATCH_TASK,
        hints={"rows": [row_hints(row, repeat) for row in rows]},
    )


def _row_objects(text: str, n_rows: int) -> dict[int, Any]:
    """Each row number's reply object (a number given twice or out of range makes the reply unreadable)."""
    reply = read_reply_object(text, ("rows",))
    if reply.value is None:
        raise UnreadableReply(reply.problem)
    items = reply.value.get("rows")
    if not isinstance(items, list):
        raise UnreadableReply('"rows" is not a list')
    found: dict[int, Any] = {}
    for item in items:
        number = item.get("row") if isinstance(item, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= n_rows:
            raise UnreadableReply(f"a row object names no shown row: {str(item)[:80]!r}")
        if number in found:
            raise UnreadableReply(f"row {number} is answered twice")
        found[number] = item
    return found


def _booked(response: ChatResponse, position: int, text: str) -> ChatResponse:
    """The response a row of a batched call keeps: the call's accounting on the first row only, and as text
    the row's own reply object (the whole reply when it could not be split)."""
    if position == 0:
        return response.model_copy(update={"text": text})
    return ChatResponse(text=text, model=response.model, cached=response.cached)


def scores_from_batch_reply(response: ChatResponse, rows: Sequence[EvalRow]) -> list[LLMScores]:
    """Each row's scores from a batched reply, in the order of ``rows``; the call booked on the first."""
    try:
        objects = _row_objects(response.text, len(rows))
    except UnreadableReply as exc:
        problem = str(exc)
        return [
            LLMScores(
                unreadable(problem), None, _booked(response, i, response.text), problem, calls=int(i == 0)
            )
            for i in range(len(rows))
        ]
    out = []
    for i, row in enumerate(rows):
        obj = objects.get(i + 1)
        text = json.dumps(obj, ensure_ascii=False) if obj is not None else ""
        booked = _booked(response, i, text)
        try:
            if obj is None:
                raise UnreadableReply(f"row {i + 1} is missing from the batched reply")
            counts = counts_of(obj, len(row.contexts))
        except UnreadableReply as exc:
            out.append(LLMScores(unreadable(str(exc)), None, booked, str(exc), calls=int(i == 0)))
            continue
        out.append(LLMScores(row_metrics(counts, row), counts, booked, calls=int(i == 0)))
    return out


class ClaimsBatcher:
    """Groups the rows asking for their claims check into calls of up to ``rows_per_call`` rows.

    A row's :meth:`score` waits until its group is full or :data:`LINGER_S` has passed since the group's first
    row came, then the group's one call is made; each row gets its own scores, or the call's error (a provider
    error after the provider's retries), as if it had made the call itself. With ``rows_per_call`` 1 every row
    makes its own one-row call.
    """

    def __init__(self, model: ChatModel, rows_per_call: int, linger_s: float = LINGER_S) -> None:
        self.model = model
        self.rows_per_call = rows_per_call
        self.linger_s = linger_s
        self._groups: dict[int, list[tuple[EvalRow, asyncio.Future[LLMScores]]]] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._calls: set[asyncio.Task[None]] = set()

    async def score(self, row: EvalRow, repeat: int = 0) -> LLMScores:
        """``row``'s claims-check scores (its ``repeat``-th scoring)."""
        if self.rows_per_call <= 1:
            return await score_row(self.model, row, repeat)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[LLMScores] = loop.create_future()
        group = self._groups.setdefault(repeat, [])
        group.append((row, future))
        if len(group) >= self.rows_per_call:
            self._send(repeat)
        elif repeat not in self._timers:
            self._timers[repeat] = loop.call_later(self.linger_s, self._send, repeat)
        return await future

    def _send(self, repeat: int) -> None:
        timer = self._timers.pop(repeat, None)
        if timer is not None:
            timer.cancel()
        group = self._groups.pop(repeat, [])
        if group:
            task = asyncio.get_running_loop().create_task(self._call(group, repeat))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)

    async def _call(self, group: list[tuple[EvalRow, asyncio.Future[LLMScores]]], repeat: int) -> None:
        rows = [row for row, _ in group]
        try:
            if len(rows) == 1:
                results = [await score_row(self.model, rows[0], repeat)]
            else:
                response = await self.model.complete(build_batch_request(rows, repeat))
                results = scores_from_batch_reply(response, rows)
        except Exception as exc:  # the rows' own calls would have raised it: each row gets it
            for _, future in group:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:
            for _, future in group:
                future.cancel()
            raise
        for (_, future), result in zip(group, results, strict=True):
            if not future.done():
                future.set_result(result)
