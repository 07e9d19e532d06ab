"""The local FIT judge's features for one (reference, new answer) pair: overlap signals plus slot readings.

:func:`compute` cleans both answers (citation marks, remarks about the reference: :func:`slots.clean`), takes the
symmetric overlap signals of :mod:`signals`, and adds what only makes sense one way round, with ``old`` the
reference: how much of the reference the new answer recalls, whether it holds the reference as a phrase, how
long it is, and the slot conflicts of :mod:`slots`.
"""

from __future__ import annotations

import math
import re

from ragreplay.judges import signals as sig
from ragreplay.judges import slots
from ragreplay.judges.hygiene import detect_en_nl

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")

SLOT_SIGNALS: tuple[str, ...] = (
    "slot_numbers",
    "slot_dates",
    "slot_names",
    "slot_roles",
    "slot_polarity",
    "echo_mismatch",
    "partial",
    "translation",
)
"""0/1 readings the judge's rules act on (see ``local_fit.DEFAULT_RULES``)."""

FEATURE_NAMES: tuple[str, ...] = (
    *sig.SIGNAL_NAMES,
    "recall",
    "novel_recall",
    "phrase",
    "new_length",
    "names_missing",
    *SLOT_SIGNALS,
)
"""Every feature :func:`compute` returns, in order; a model JSON names the ones it uses."""


def _phrase(old: str, new: str) -> float:
    """1.0 when either answer, or one of its sentences of three words or more, occurs whole in the other.

    A short reference inside a long answer ("Old Trafford" in "The stadium is Old Trafford.") and a sentence both
    answers state word for word count alike.
    """
    a, b = f" {sig.normalize_multilingual(old)} ", f" {sig.normalize_multilingual(new)} "
    if not a.strip() or not b.strip():
        return 0.0
    if a in b or b in a:
        return 1.0
    for text, other in ((old, b), (new, a)):
        for sentence in _SENTENCES.split(text):
            s = sig.normalize_multilingual(sentence)
            if len(s.split()) >= 3 and f" {s} " in other:
                return 1.0
    return 0.0


def translation(old: str, new: str, cosine: float) -> float:
    """``cosine`` when both answers' languages are detected and differ (word overlap then says nothing), else 0.

    English/Dutch function words (:func:`~ragreplay.judges.hygiene.detect_en_nl`), not the reports' detector:
    the shipped weights and the dev figures were fitted with this feature."""
    la, lb = detect_en_nl(old), detect_en_nl(new)
    return cosine if la is not None and lb is not None and la != lb else 0.0


def compute(question: str, old: str, new: str, cosine: float) -> dict[str, float]:
    """All features of the pair; ``cosine`` is the embedding cosine of the two raw answers."""
    a, b = slots.clean(old), slots.clean(new)
    q_tokens = set(sig.answer_tokens(question))
    values = sig.compute_signals(question, a, b, cosine)
    values.update(
        recall=sig.containment(a, b),
        novel_recall=sig.containment(a, b, ignore=q_tokens),
        phrase=_phrase(a, b),
        new_length=math.log1p(len(sig.answer_tokens(b))),
        names_missing=sig.entities_missing(a, b),
        slot_numbers=slots.number_conflict(a, b),
        slot_dates=slots.date_conflict(a, b),
        slot_names=slots.name_conflict(a, b),
        slot_roles=slots.role_conflict(a, b),
        slot_polarity=slots.polarity_conflict(a, b),
        echo_mismatch=slots.echo_mismatch(question, a, b),
        partial=slots.partial(question, a, b),
        translation=translation(a, b, cosine),
    )
    return {name: float(values[name]) for name in FEATURE_NAMES}
