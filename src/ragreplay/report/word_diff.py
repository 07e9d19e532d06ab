"""A word-level diff of two answers (difflib over word tokens), as segments a template renders with
``<del>`` and ``<ins>``: the template escapes each segment's text, so no answer can inject markup."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

MAX_TOKENS = 6000
"""Tokens (words, spaces, punctuation) of each side the diff compares at most; past that the rest of each
side is one deleted and one inserted segment, so a huge answer cannot make a page slow."""

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Segment:
    """A run of text both sides share (``same``), only the old side has (``deleted``) or only the new
    (``inserted``)."""

    kind: Literal["same", "deleted", "inserted"]
    text: str


def tokens(text: str) -> list[str]:
    """``text`` as words, runs of white space and single punctuation marks; joined they give ``text`` back."""
    return _TOKEN.findall(text)


def word_diff(old: str, new: str, max_tokens: int = MAX_TOKENS) -> list[Segment]:
    """The segments that turn ``old`` into ``new``, word by word, in reading order (deleted before inserted
    where a stretch was replaced)."""
    a, b = tokens(old), tokens(new)
    rest_a, rest_b = "".join(a[max_tokens:]), "".join(b[max_tokens:])
    a, b = a[:max_tokens], b[:max_tokens]
    out: list[Segment] = []

    def add(kind: Literal["same", "deleted", "inserted"], text: str) -> None:
        if not text:
            return
        if out and out[-1].kind == kind:
            out[-1] = Segment(kind, out[-1].text + text)
        else:
            out.append(Segment(kind, text))

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            add("same", "".join(a[i1:i2]))
        else:
            add("deleted", "".join(a[i1:i2]))
            add("inserted", "".join(b[j1:j2]))
    add("deleted", rest_a)
    add("inserted", rest_b)
    return out
