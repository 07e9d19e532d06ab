"""Combine the user's feedback with the FIT judgment into one of four verdicts."""

from __future__ import annotations

from ragreplay.core.types import Feedback, Fit, Verdict

_TABLE = {
    (Feedback.GOOD, Fit.FIT): Verdict.GOOD_FIT,
    (Feedback.GOOD, Fit.NO_FIT): Verdict.GOOD_NO_FIT,
    (Feedback.BAD, Fit.FIT): Verdict.BAD_FIT,
    (Feedback.BAD, Fit.NO_FIT): Verdict.BAD_NO_FIT,
}


def verdict_for(feedback: Feedback, fit: Fit) -> Verdict | None:
    """The verdict for a judged case, or ``None`` when the judge could not score it.

    An unscorable judgment never becomes a verdict: it is counted in its own column.
    """
    return _TABLE.get((feedback, fit))
