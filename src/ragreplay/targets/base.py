"""What every target shares: a name for reports and a version hashed from its configuration; and asking one
safely."""

from __future__ import annotations

import time

from ragreplay.core.types import Answer, Case
from ragreplay.errors import RagreplayError
from ragreplay.ports import Target


class TargetBase:
    """Holds ``name`` and ``version``; subclasses set ``_name`` and ``_version`` and implement ``answer``."""

    _name: str
    _version: str

    @property
    def name(self) -> str:
        """A short label for reports."""
        return self._name

    @property
    def version(self) -> str:
        """A content hash of the configuration (and, where known, of the code or log behind it)."""
        return self._version


async def answer_safely(target: Target, question: str, case: Case) -> Answer:
    """The target's answer; an exception becomes ``Answer.error`` (a failing target never stops a run; a user
    error, :class:`~ragreplay.errors.RagreplayError`, still propagates). ``latency_ms`` is measured when the
    target reports none."""
    start = time.perf_counter()
    try:
        answer = await target.answer(question, case)
    except RagreplayError:
        raise
    except Exception as exc:  # any other target failure is recorded on the row, never dropped
        return Answer(text="", error=f"{type(exc).__name__}: {exc}", latency_ms=_since(start))
    if answer.latency_ms is None:
        answer = answer.model_copy(update={"latency_ms": _since(start)})
    return answer


def _since(start: float) -> float:
    return (time.perf_counter() - start) * 1000
