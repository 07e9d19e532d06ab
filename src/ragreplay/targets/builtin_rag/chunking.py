"""Fixed-size, overlapping word windows over each document; a chunk never crosses a document."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragreplay.targets.builtin_rag.corpus import Document

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A window of a document: id ``<doc_id>#<n>`` (n from 1) and its character span in the document."""

    id: str
    doc_index: int
    n: int
    text: str
    start: int
    end: int


def word_windows(n_words: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """``(first, last_exclusive)`` word indices of each window; the last window ends at the last word.

    Windows start every ``size - overlap`` words; no window lies wholly inside the one before it.
    """
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > overlap >= 0, got size={size}, overlap={overlap}")
    step = size - overlap
    windows = []
    start = 0
    while True:
        end = min(start + size, n_words)
        windows.append((start, end))
        if end >= n_words:
            break
        start += step
    return windows if n_words else []


def chunk_document(doc: Document, doc_index: int, size: int, overlap: int) -> list[Chunk]:
    """The chunks of one document; the text of each is the document's own text between its first and last word."""
    words = list(_WORD.finditer(doc.text))
    chunks = []
    for n, (first, last) in enumerate(word_windows(len(words), size, overlap), start=1):
        start, end = words[first].start(), words[last - 1].end()
        chunks.append(Chunk(f"{doc.id}#{n}", doc_index, n, doc.text[start:end], start, end))
    return chunks


def chunk_corpus(documents: Iterable[Document], size: int, overlap: int) -> list[Chunk]:
    """The chunks of every document, in document order."""
    return [c for i, doc in enumerate(documents) for c in chunk_document(doc, i, size, overlap)]
