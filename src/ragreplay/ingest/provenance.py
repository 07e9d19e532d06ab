"""What a reader saw: where each value of a turn came from, and every record read or left out, by kind and reason.

``ingest --dry-run`` shows it so a user can check a mapping before anything is written. Readers call the
``note_*`` functions as they go; they cost a context-variable read and nothing more unless an
:func:`observing` block is active (a dry run), so the write path pays nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

#: The turns a preview keeps; the counts cover the whole file.
PREVIEW_TURNS = 5
#: Distinct record kinds and reasons kept (a reason naming a value could otherwise grow without bound).
MAX_KINDS = 200


@dataclass
class Provenance:
    """Counts of the records read (by kind) and left out (by reason), and the origins of the first turns.

    ``origins`` maps a conversation id to one ``{value: source field}`` dict per turn, e.g.
    ``{"question": "trace.input.messages[-1].content", "answer": "observation GENERATION output"}``.
    """

    preview_turns: int = PREVIEW_TURNS
    read: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    origins: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    turns_noted: int = 0

    def count(self, counter: Counter[str], key: str) -> None:
        """Add one to ``key`` in ``counter`` (past :data:`MAX_KINDS` distinct keys, to ``other``)."""
        counter[key if key in counter or len(counter) < MAX_KINDS else "other"] += 1


_ACTIVE: ContextVar[Provenance | None] = ContextVar("ragreplay_ingest_provenance", default=None)


@contextmanager
def observing(preview_turns: int = PREVIEW_TURNS) -> Iterator[Provenance]:
    """Collect what the readers note inside the block into the :class:`Provenance` it yields."""
    seen = Provenance(preview_turns=preview_turns)
    token = _ACTIVE.set(seen)
    try:
        yield seen
    finally:
        _ACTIVE.reset(token)


def note_record(kind: str) -> None:
    """A record of this kind was read and used (``trace``, ``observation GENERATION``, ``feedback row``...)."""
    seen = _ACTIVE.get()
    if seen is not None:
        seen.count(seen.read, kind)


def note_ignored(reason: str) -> None:
    """A record was read and left out, for this reason (``score 'hallucination': not a feedback name``)."""
    seen = _ACTIVE.get()
    if seen is not None:
        seen.count(seen.ignored, reason)


def note_origins(conversation_id: str, turns: Sequence[Mapping[str, str]]) -> None:
    """Where each value of a conversation's turns came from, one mapping per turn (kept for the first few)."""
    seen = _ACTIVE.get()
    if seen is None or seen.turns_noted >= seen.preview_turns:
        return
    seen.origins[conversation_id] = [dict(turn) for turn in turns]
    seen.turns_noted += len(turns)
