"""Shared fakes for the shadow tests (no tests here): a row sink that fails or stalls, targets that fail or hang."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Answer, Case, RetrievedChunk


class FakeSecrets:
    """The store's secrets repository in memory: the first value made under a name is kept."""

    def __init__(self) -> None:
        self.kept: dict[str, str] = {}

    def get_or_create(self, name: str, make: Callable[[], str]) -> tuple[str, bool]:
        if name in self.kept:
            return self.kept[name], False
        self.kept[name] = make()
        return self.kept[name], True


class FakeSink:
    """Keeps written rows by id (insert-ignore); raises while ``failing``; blocks while ``gate`` is clear."""

    def __init__(self) -> None:
        self.rows: dict[str, ShadowRow] = {}
        self.feedback: dict[str, ShadowFeedback] = {}
        self.batches: list[int] = []
        self.failing = False
        self.gate = threading.Event()
        self.gate.set()
        self.secrets = FakeSecrets()

    @property
    def shadow_rows(self) -> FakeSink:
        """The sink plays the store's shadow_rows repository too."""
        return self

    @property
    def shadow_feedback(self) -> FakeSink:
        """And its shadow_feedback repository."""
        return self

    def write_shadow_rows(self, rows: Sequence[ShadowRow]) -> None:
        self.gate.wait(5)
        if self.failing:
            raise ConnectionError("store down")
        self.batches.append(len(rows))
        for row in rows:
            self.rows.setdefault(row.id, row)

    def write_shadow_feedback(self, items: Sequence[ShadowFeedback]) -> None:
        if self.failing:
            raise ConnectionError("store down")
        for item in items:
            seen = self.feedback.get(item.request_id)
            if seen is None or item.ts >= seen.ts:
                self.feedback[item.request_id] = item


def make_row(i: int) -> ShadowRow:
    return make_shadow_row(
        request_id=f"r{i}",
        champion_answer="a",
        challenger_answer=ShadowAnswer(),
    )


class FakeTarget:
    """A target whose behaviour is set per instance: answer, raise, return an error answer, or hang."""

    def __init__(self, name: str, text: str = "", delay_s: float = 0.0, mode: str = "answer") -> None:
        self._name = name
        self.text = text or f"{name} says hi"
        self.delay_s = delay_s
        self.mode = mode
        self.calls: list[tuple[str, Case]] = []
        self.finished = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return "v1"

    async def answer(self, question: str, case: Case) -> Answer:
        self.calls.append((question, case))
        if self.mode == "hang":
            await asyncio.Event().wait()
        if self.mode == "stubborn":  # ignores the first cancellation, then takes its time
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                await asyncio.sleep(0.5)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.finished += 1
        if self.mode == "raise":
            raise RuntimeError("index offline")
        if self.mode == "error":
            return Answer(text="", error="rate limited")
        if self.mode == "champion_raise":
            raise KeyError("champion broke")
        return Answer(
            text=self.text,
            contexts=(RetrievedChunk(id=f"{self._name}#1"),),
            latency_ms=5.0,
            cost_usd=0.002,
        )

    async def aclose(self) -> None:
        return None
