"""The eval job keeps the judge busy while rows wait for their saves (at most ``concurrency`` calls at once, and
more rows than that in flight), and imports the lexical metrics' libraries off the event loop before the first
call, only when a row has a reference."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.eval import EvalContext, EvalRow
from ragreplay.evaluation import job as eval_job
from ragreplay.evaluation.run import EvalReport, evaluate
from ragreplay.jobs.writer import StoreWriter
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.store import Store
from ragreplay.store.evals import EvalRowRecord

CALL_S = 0.02
SAVE_S = 0.05


def rows(n: int, reference: bool) -> list[EvalRow]:
    return [
        EvalRow(
            id=f"q{i}",
            question=f"How many leave days does team {i} get?",
            answer=f"Team {i} gets {20 + i} leave days.",
            reference=f"Team {i} gets {20 + i} days." if reference else None,
            contexts=(EvalContext(id=f"doc{i}", text=f"Team {i} gets {20 + i} leave days a year."),),
        )
        for i in range(n)
    ]


class SlowWriter(StoreWriter):
    """A writer whose eval-row saves take ``SAVE_S`` longer, counting the saves under way."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.saving = 0

    async def save_eval_rows(self, rows: Sequence[EvalRowRecord]) -> None:
        self.saving += 1
        try:
            await asyncio.sleep(SAVE_S)
            await super().save_eval_rows(rows)
        finally:
            self.saving -= 1


def test_rows_waiting_for_their_save_hold_no_call_slot(store: Store) -> None:
    fake = FakeChatModel()
    busy: list[int] = []  # at each call's start: calls under way plus saves under way
    writer = SlowWriter(store)

    async def reply(request: ChatRequest) -> ChatResponse:
        busy.append(judge.in_flight + writer.saving)
        await asyncio.sleep(CALL_S)
        return await fake.complete(request)

    judge = ScriptedChatModel(reply)

    async def go() -> EvalReport:
        async with writer:
            return await evaluate(store, writer, rows(24, False), "d", judge, "fake:default", concurrency=4)

    report = asyncio.run(go())
    assert judge.calls == 24 and report.summary.errors == 0 and len(report.rows) == 24
    assert judge.peak_in_flight == 4  # the bound on calls holds, and is reached
    assert max(busy) > 4  # calls went on while other rows waited for their saves
    assert max(busy) <= 4 * eval_job.WORKERS_PER_SLOT


@pytest.mark.parametrize("reference", [True, False])
def test_lexical_backends_load_off_the_loop_before_the_first_call(
    store: Store, monkeypatch: pytest.MonkeyPatch, reference: bool
) -> None:
    judge = FakeChatModel()
    loaded: list[tuple[int, int]] = []  # (thread, judge calls made before)
    monkeypatch.setattr(
        eval_job, "load_backends", lambda: loaded.append((threading.get_ident(), judge.calls))
    )

    async def go() -> EvalReport:
        async with StoreWriter(store) as writer:
            return await evaluate(
                store, writer, rows(6, reference), "d", judge, "fake:default", concurrency=2
            )

    report = asyncio.run(go())
    assert judge.calls == 6 and ("bleu" in report.rows[0].metrics) is reference
    if reference:
        assert loaded == [(loaded[0][0], 0)] and loaded[0][0] != threading.get_ident()
    else:
        assert loaded == []


def test_a_rows_judge_call_is_out_while_its_own_metrics_are_computed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeChatModel()
    events: list[str] = []

    async def reply(request: ChatRequest) -> ChatResponse:
        events.append("call")
        await asyncio.sleep(CALL_S)
        return await fake.complete(request)

    lexical = eval_job.lexical_scores

    def recorded(row: EvalRow, *args: object) -> object:
        events.append("lexical")
        return lexical(row, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(eval_job, "lexical_scores", recorded)

    async def go() -> EvalReport:
        async with StoreWriter(store) as writer:
            return await evaluate(store, writer, rows(1, True), "d", ScriptedChatModel(reply), "fake:default")

    report = asyncio.run(go())
    assert report.summary.errors == 0 and "bleu" in report.rows[0].metrics
    assert events == ["call", "lexical"]  # the request went first: the metrics ran while it was out


def test_a_row_whose_metrics_fail_leaves_no_judge_call_behind(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    cancelled: list[str] = []

    async def reply(request: ChatRequest) -> ChatResponse:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append("judge")
            raise
        raise AssertionError("never answered")

    def broken(row: EvalRow, *args: object) -> object:
        raise RuntimeError("a metric failed")

    monkeypatch.setattr(eval_job, "lexical_scores", broken)

    async def go() -> None:
        async with StoreWriter(store) as writer:
            await evaluate(store, writer, rows(1, True), "d", ScriptedChatModel(reply), "fake:default")

    with pytest.raises(RuntimeError, match="a metric failed"):
        asyncio.run(asyncio.wait_for(go(), timeout=10))
    assert cancelled == ["judge"]
