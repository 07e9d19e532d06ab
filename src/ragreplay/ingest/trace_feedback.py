"""Scores, feedback rows and annotations of tracing tools read as a user's good/bad feedback.

Which scores count: those whose name is one of :data:`FEEDBACK_NAMES` (compared case-insensitively, ``-`` and
spaces as ``_``), or of the field mapping's ``feedback_names`` when it sets any. Other scores (an LLM judge's
"hallucination", a latency check) are not user feedback and are left out. A categorical score is read by its
label, never by its index; a boolean one is true/false; a numeric one is 1/0/-1, or a rating read with the
mapping's ``rating_threshold``; every label also goes through the mapping's ``feedback_synonyms``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ragreplay.core.types import Feedback
from ragreplay.ingest.fields import parse_feedback_value
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import Record

#: Score names read as user feedback unless the field mapping lists its own ``feedback_names``.
FEEDBACK_NAMES = (
    "user_feedback",
    "feedback",
    "thumbs",
    "thumbs_up_down",
    "user_score",
    "user_rating",
    "rating",
)
_KINDS = {"categorical": "categorical", "boolean": "boolean", "bool": "boolean", "numeric": "numeric"}


def _word(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def is_feedback_name(name: Any, mapping: FieldMapping) -> bool:
    """True if a score called ``name`` is the user's feedback (see the module's docstring)."""
    names = mapping.feedback_names or FEEDBACK_NAMES
    return isinstance(name, str) and _word(name) in {_word(n) for n in names}


def score_feedback(
    rec: Record,
    field: str,
    mapping: FieldMapping,
    *,
    kind: Any,
    value: Any,
    label: Any,
) -> Feedback | None:
    """The feedback a score carries; problems (an unknown kind, an unreadable value) are recorded on ``rec``.

    ``kind`` is the score's data type (``CATEGORICAL``/``BOOLEAN``/``NUMERIC``, any case, or ``None`` when the
    tool does not say: then a string label wins over the value). ``field`` names the value in the file.
    """
    data_type = _KINDS.get(str(kind).strip().lower()) if kind is not None else None
    if kind is not None and data_type is None:
        parent = field.rpartition(".")[0]
        rec.problem(
            f"{parent}.dataType" if parent else "dataType",
            f"unknown score data type {kind!r}",
            "use NUMERIC, CATEGORICAL or BOOLEAN",
        )
        return None
    has_label = isinstance(label, str) and bool(label.strip())
    if data_type == "categorical" or (data_type is None and has_label):
        if not has_label:
            rec.problem(
                field,
                "a categorical score without its label",
                "export the label (Langfuse stringValue, LangSmith value, the annotation's label): "
                "categories are read by label, never by their index",
            )
            return None
        return parse_feedback_value(label, rec, field, mapping)
    if data_type == "boolean":
        if value is None and has_label:
            value = label
        if isinstance(value, int | float) and not isinstance(value, bool) and value in (0, 1):
            value = bool(value)  # never a rating, whatever the threshold
    return parse_feedback_value(value, rec, field, mapping)


class Votes:
    """Feedback found in a file, keyed by what it points at (a trace, run or span id), latest first to win.

    A user who changes their mind leaves two scores on one answer: the one with the later time (or, with no
    times, the later line) is kept.
    """

    def __init__(self) -> None:
        self._votes: dict[str, tuple[tuple[float, int], Feedback | None, int | None, str]] = {}

    def add(
        self, target: str, feedback: Feedback | None, at: datetime | None, rec: Record, field: str
    ) -> None:
        """Record ``feedback`` on ``target`` from the record ``rec`` (its ``field``)."""
        order = (at.timestamp() if at is not None else float("-inf"), rec.line or 0)
        if target not in self._votes or order >= self._votes[target][0]:
            self._votes[target] = (order, feedback, rec.line, field)

    def items(self) -> list[tuple[str, Feedback | None, int | None, str]]:
        """``(target, feedback, line, field)`` for every target, in file order."""
        rows = sorted(self._votes.items(), key=lambda item: item[1][2] or 0)
        return [(target, feedback, line, field) for target, (_, feedback, line, field) in rows]
