"""Judging a new answer against several accepted references: each judged on its own, the answer fits if it fits any.

Joining references into one old answer ("A / B / C") makes every overlap signal worse the more references there
are, and an LLM judge reads the join as one answer with several parts. Here each reference is the case's old
answer in turn, with the same judge; a judge that can take the references at once (the local judge: one
embedding batch) does so through :class:`ReferencesJudge`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragreplay.core.types import Answer, Case, Fit, Judgment, TokenUsage
from ragreplay.ports import Judge


@runtime_checkable
class ReferencesJudge(Protocol):
    """A judge that judges one answer against several references itself (fits any)."""

    async def judge_references(
        self, question: str, references: Sequence[str], new_answer: Answer
    ) -> Judgment:
        """The combined judgment of ``new_answer`` against each reference (see :func:`combine`)."""
        ...


def combine(judgments: Sequence[Judgment]) -> Judgment:
    """One judgment from one per reference: FIT if any is FIT, else UNSCORABLE if any is, else NO_FIT.

    The deciding judgment (the first FIT, else the first UNSCORABLE, else the first) gives the reason, prefixed
    with which reference it was; the best guess is FIT when any reference's best guess is; tokens and cost add up;
    ``raw`` lists each reference's decision.
    """
    if not judgments:
        raise ValueError("no references to judge against")
    if len(judgments) == 1:
        return judgments[0]
    fits = [j.fit for j in judgments]
    fit = Fit.FIT if Fit.FIT in fits else Fit.UNSCORABLE if Fit.UNSCORABLE in fits else Fit.NO_FIT
    index = fits.index(fit)
    leans = [j.best_guess or j.fit for j in judgments]
    best_guess = Fit.FIT if Fit.FIT in leans else Fit.NO_FIT
    chosen = judgments[index]
    usage = sum((j.tokens for j in judgments), TokenUsage())
    raw = json.dumps({"references": [{"fit": j.fit.value, "raw": j.raw} for j in judgments]})
    return chosen.model_copy(
        update={
            "fit": fit,
            "best_guess": best_guess,
            "reason": f"reference {index + 1} of {len(judgments)}: {chosen.reason}",
            "tokens": usage,
            "cost_usd": sum(j.cost_usd for j in judgments),
            "raw": raw,
        }
    )


async def judge_references(
    judge: Judge, case: Case, question: str, new_answer: Answer, references: Sequence[str]
) -> Judgment:
    """Judge ``new_answer`` against each of ``references`` (default: the case's old answer) and :func:`combine`."""
    refs = [r for r in references if r.strip()] or [case.old_answer]
    if isinstance(judge, ReferencesJudge):
        return await judge.judge_references(question, refs, new_answer)
    cases = [case.model_copy(update={"old_answer": r}) for r in refs]
    return combine(await asyncio.gather(*(judge.judge(c, question, new_answer) for c in cases)))
