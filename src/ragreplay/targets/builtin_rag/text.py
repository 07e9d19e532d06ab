"""Text helpers shared by indexing and answering: a simple multilingual tokenizer and a sentence splitter.

The tokenizer lowercases, strips accents, splits on anything not a letter or digit and drops English and
Dutch stopwords. There is no stemming: "day" and "days" are different terms to BM25 (the dense retriever
covers such variants).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t ll re ve d m o y also may might must shall us get got many much
    """.split()
)
DUTCH_STOPWORDS = frozenset(
    """
    aan al alle als alles ben bij binnen daar daarom dan dat de der deze die dit doch doen door dus een
    eens en er ge geen geweest haar had heb hebben heeft hem het hier hij hoe hun ik in is ja je jij jou
    jouw kan kon kunnen maar me meer men met mij mijn moet moeten na naar niet niets nog nu of om omdat
    ons onze ook op over reeds te tegen toch toen tot u uit uw van veel voor waar wanneer want waren was
    wat we wel welk welke werd wie wij wil worden wordt zal ze zelf zich zij zijn zo zonder zou zullen
    hoe hoeveel waarom mag mogen
    """.split()
)
STOPWORDS = ENGLISH_STOPWORDS | DUTCH_STOPWORDS

_TOKEN = re.compile(r"[a-z0-9]+")
# A sentence ends at . ! ? followed by whitespace, or at a line break; list markers and heading hashes
# at the start of a line are not part of the sentence.
_EMPHASIS = re.compile(r"\*\*|__|`")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+|>\s*)")


def strip_accents(text: str) -> str:
    """``text`` without combining accents ("één" -> "een", "café" -> "cafe")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Lowercase, accent-free, alphanumeric tokens of ``text`` without English or Dutch stopwords."""
    return [t for t in _TOKEN.findall(strip_accents(text.lower())) if t not in STOPWORDS]


def content_tokens(text: str) -> set[str]:
    """The distinct tokens of ``text`` (see :func:`tokenize`)."""
    return set(tokenize(text))


@dataclass(frozen=True)
class Sentence:
    """A sentence of a document: its text and where it sits (character offsets into the document)."""

    text: str
    start: int
    end: int
    heading: bool = False
    section: str = ""
    """The text of the nearest heading above the sentence ("" before the first heading)."""


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` with their offsets; markdown headings are kept but flagged.

    Lines wrapped inside a paragraph are joined; a blank line, a heading or a list item starts a new block,
    and a sentence never crosses a block. Sentence text has its whitespace collapsed and markdown
    emphasis markers (``**``, ``__``, backticks) removed; each sentence knows its section heading.
    """
    sentences: list[Sentence] = []
    section = ""
    for start, end, heading in _blocks(text):
        if heading:
            section = _clean(text[start:end])
        pos = start
        for match in [*_SENTENCE_END.finditer(text, start, end), None]:
            stop = match.start() if match is not None else end
            piece = text[pos:stop]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                first, last = pos + lead, pos + len(piece.rstrip())
                sentences.append(Sentence(_clean(text[first:last]), first, last, heading, section))
            if match is not None:
                pos = match.end()
    return sentences


def _clean(text: str) -> str:
    return " ".join(_EMPHASIS.sub("", text).split())


def _blocks(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_heading)`` of each paragraph, heading or list item (markers excluded)."""
    blocks: list[list[int | bool]] = []
    open_block = False
    line_start = 0
    for raw in text.split("\n"):
        line_end = line_start + len(raw)
        if not raw.strip():
            open_block = False
        else:
            marker = _LINE_MARKER.match(raw)
            body_start = line_start + (marker.end() if marker is not None else 0)
            heading = marker is not None and marker.group().lstrip().startswith("#")
            if open_block and marker is None:
                blocks[-1][1] = line_end
            else:
                blocks.append([body_start, line_end, heading])
            open_block = not heading
        line_start = line_end + 1
    return [(int(a), int(b), bool(h)) for a, b, h in blocks]
