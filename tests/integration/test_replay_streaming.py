"""A run streams its cases and its summary: memory does not grow with the run (issue 13)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime

import pytest

from ragreplay.core.ids import case_id
from ragreplay.core.runs import SourceRecord
from ragreplay.core.types import Answer, Case, Conversation, Feedback, Message, Role, Verdict
from ragreplay.replay.replay_run import case_selection, replay, summarize_run
from ragreplay.report.terminal import render_text
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget

N = 1200


def _ingest(store: Store, n: int = N) -> None:
    items = []
    for i in range(n):
        question, old = f"What does policy {i} say?", f"Policy {i} says {i}."
        msgs = (
            Message(role=Role.HUMAN, content=question),
            Message(role=Role.AI, content=old, feedback=Feedback.BAD if i % 2 else Feedback.GOOD),
        )
        case = Case(
            id=case_id(f"c{i:05d}", 1, question, old),
            conversation_id=f"c{i:05d}",
            turn_index=1,
            query=question,
            history=(),
            old_answer=old,
            feedback=msgs[1].feedback or Feedback.GOOD,
            tags={"team": f"t{i % 3}"},
        )
        items.append((Conversation(id=f"c{i:05d}", messages=msgs), [case], []))
    source = SourceRecord(id="src", path="x", format="canonical", ingested_at=datetime.now(UTC))
    store.cases.write_source(source, items)


class CountingTarget(FakeTarget):
    """A target with a new answer for every case (so BAD cases are BAD_NO_FIT), noting how many cases the
    store had handed out when the first one was asked."""

    def __init__(self, read: list[int]) -> None:
        super().__init__(name="counting", default="Something else entirely.")
        self.read = read
        self.read_at_first_answer: int | None = None

    async def answer(self, question: str, case: Case) -> Answer:
        if self.read_at_first_answer is None:
            self.read_at_first_answer = len(self.read)
        return await super().answer(question, case)


async def test_a_run_reads_its_cases_as_it_goes_and_summarises_without_loading_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(store)
    read: list[int] = []
    iter_cases = store.cases.iter_cases

    def counting(
        source_ids: Sequence[str] | None = None, tags: Mapping[str, str] | None = None
    ) -> Iterator[Case]:
        for case in iter_cases(source_ids, tags):
            read.append(1)
            yield case

    monkeypatch.setattr(store.cases, "iter_cases", counting)
    target = CountingTarget(read)
    cases = case_selection(store)
    assert len(cases) == N and read == []  # the ids are read, not the cases
    run = await replay(
        store, Settings(db=store.url, judge="fake:default", concurrency=4), target, cases, {}, {}
    )
    assert target.read_at_first_answer is not None and target.read_at_first_answer < N
    assert len(read) == N  # each case read once

    def no_loading(run_id: str) -> None:
        raise AssertionError("the summary loads every result at once")

    monkeypatch.setattr(store.runs, "load_results", no_loading)
    full, short = summarize_run(store, run.id), summarize_run(store, run.id, keep=5)
    assert full.n_cases == short.n_cases == N and full.rates == short.rates and full.by_tag == short.by_tag
    assert full.rates.counts[Verdict.BAD_NO_FIT] == N // 2 and len(full.review) == N // 2
    assert len(short.review) == 5 and not short.all_cases and full.all_cases
    assert short.review == full.review[:5]
    # the terminal report of the short summary still counts every case it does not list
    assert f"For review: BAD_NO_FIT ({N // 2})" in render_text(short)
    assert render_text(short) == render_text(full)
