"""Golden sets, pure: a row (a question with its correct answer and the chunks that hold it), a version's record,
the content hash that makes re-importing the same rows a no-op, and ``NAME@version`` references.

A golden row has the shape of an eval dataset row (:class:`ragreplay.core.eval.EvalRow`) without the answer
under test: ``id``, ``question``, ``reference`` (the correct answer; none for a question kept without one),
``contexts`` (the chunks that hold the answer, ``{id, text}``), ``judgments`` (graded relevance per chunk id),
``tags``, and ``history`` (the earlier turns a follow-up question needs). The answer under test and its
ranking (an eval row's ``answer`` and ``retrieved``) are not golden: a target gives them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.eval import EvalContext
from ragreplay.core.ids import content_hash
from ragreplay.core.review import HistoryTurn

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A golden set's name: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, 64 at most."""
NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
_VERSION = re.compile(r"^v?(\d{1,9})$")


class GoldenRow(BaseModel):
    """One question of a golden set with its correct answer and where the answer is (see the module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    reference: str | None = None
    contexts: tuple[EvalContext, ...] = ()
    judgments: dict[str, int] | None = None
    tags: tuple[str, ...] = ()
    history: tuple[HistoryTurn, ...] = ()

    def chunk_ids(self) -> list[str]:
        """The ids of the chunks that hold the answer: the judged ones, else the contexts'."""
        if self.judgments:
            return [cid for cid, grade in self.judgments.items() if grade > 0]
        return [c.id for c in self.contexts]

    def as_json(self) -> dict[str, Any]:
        """The row as one JSONL object, fields left out when empty (the import format)."""
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.reference is not None:
            out["reference"] = self.reference
        if self.contexts:
            out["contexts"] = [c.model_dump() for c in self.contexts]
        if self.judgments is not None:
            out["judgments"] = dict(self.judgments)
        if self.tags:
            out["tags"] = list(self.tags)
        if self.history:
            out["history"] = [t.model_dump() for t in self.history]
        return out


class GoldenSetRecord(BaseModel):
    """One immutable version of a named golden set: its content hash, when and how it was made."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    version: int
    created_at: datetime
    content_hash: str
    recipe: dict[str, Any] = Field(default_factory=dict)
    """How the rows were made: ``{"source": "import", "file": ...}``, ``{"source": "reviews"}``, ``synth``..."""
    n_rows: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    """Rows per tag (``kind=...``, ``made=...``, ``source=...``) at the time it was saved."""

    @property
    def ref(self) -> str:
        """``NAME@vN``: how commands name this version."""
        return f"{self.name}@v{self.version}"


def rows_hash(rows: Sequence[GoldenRow]) -> str:
    """The content hash of a version: the rows' canonical JSON, in order (the same rows always hash alike)."""
    return content_hash([r.as_json() for r in rows], 32)


def version_id(name: str, digest: str, version: int) -> str:
    """The id of version ``version`` of ``name`` with content ``digest``."""
    return "gs_" + content_hash([name, version, digest], 16)


def tag_counts(rows: Iterable[GoldenRow]) -> dict[str, int]:
    """Rows per tag, most frequent first (ties by tag)."""
    counts = Counter(tag for row in rows for tag in row.tags)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a golden set (``None`` when it can)."""
    if NAME_PATTERN.match(name):
        return None
    return f"{name!r} is not a golden set name: use {NAME_RULE}"


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME@latest``, ``NAME@vN`` or ``NAME@N`` -> ``(name, N or None for the latest)``.

    :class:`ValueError` with the rule when ``ref`` is neither."""
    name, _, version = ref.strip().partition("@")
    problem = check_name(name)
    if problem is not None:
        raise ValueError(problem)
    if not version or version == "latest":
        return name, None
    match = _VERSION.match(version)
    if match is None or int(match.group(1)) < 1:
        raise ValueError(f"{version!r} is not a version: write NAME@v3, NAME@3 or NAME@latest")
    return name, int(match.group(1))
