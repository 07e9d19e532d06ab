"""Key facts of a reference answer and how much of each one a chunk holds, lexically.

A reference is split into sentences (and sentences at ``;``); each sentence with a content term is a fact.
A fact's terms are its numbers, normalised (``50,000`` and ``50.000`` are ``50000``, ``2,45`` is ``2.45``, a
date ``2025-01-01`` stays whole), and its content words (lowercase, accent-free, no English/Dutch stopwords,
a trailing ``s`` folded). Numbers and dates weigh :data:`NUMBER_WEIGHT`, names (a capitalised word that does
not start its sentence) :data:`NAME_WEIGHT`, other words 1: a chunk that holds "10%" and "April" holds more of
"The bonus is 10% and paid in April" than one that only says "bonus" and "paid".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ragreplay.targets.builtin_rag.text import split_sentences, strip_accents, tokenize

NUMBER_WEIGHT = 3.0
NAME_WEIGHT = 2.0
WORD_WEIGHT = 1.0
MAX_FACTS = 30
"""Facts read from one reference; the rest are left out (and counted)."""

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_THOUSANDS = re.compile(r"[.,](?=\d{3}(?!\d))")
_WORD = re.compile(r"[^\W\d_]+")
_CLAUSE_END = re.compile(r"\s*;\s+")


def normal_number(text: str) -> str:
    """A number as a term: a ``.`` or ``,`` before exactly three digits is a thousands separator (dropped),
    another ``,`` a decimal comma (made ``.``); dates and times keep their ``-``, ``/`` and ``:``."""
    return _THOUSANDS.sub("", text).replace(",", ".")


def fold(word: str) -> str:
    """A content word as a term: a trailing ``s`` of a word over four letters is dropped (days -> day)."""
    return word[:-1] if len(word) > 4 and word.endswith("s") else word


def numbers_in(text: str) -> set[str]:
    """The normalised numbers of ``text``."""
    return {normal_number(m.group()) for m in _NUMBER.finditer(text)}


def words_in(text: str) -> set[str]:
    """The folded content words of ``text`` (numbers left out)."""
    return {fold(t) for t in tokenize(_NUMBER.sub(" ", text)) if not t.isdigit()}


def terms_in(text: str) -> set[str]:
    """Every term of ``text``: numbers and content words, as a fact's terms are made."""
    return numbers_in(text) | words_in(text)


def _names(sentence: str) -> set[str]:
    names: set[str] = set()
    for i, match in enumerate(_WORD.finditer(sentence)):
        word = match.group()
        if i > 0 and word[:1].isupper():
            names.update(fold(t) for t in tokenize(word))
    return names


@dataclass(frozen=True)
class Fact:
    """One key fact: its text, its terms with their weights, and its numbers (all must be held)."""

    text: str
    weights: Mapping[str, float] = field(default_factory=dict)
    numbers: frozenset[str] = frozenset()

    @property
    def weight(self) -> float:
        """The fact's total weight: how much it counts in a reference's coverage."""
        return sum(self.weights.values())


def fact_of(text: str) -> Fact | None:
    """The fact a sentence states, or ``None`` when it has no content term."""
    numbers = numbers_in(text)
    words = words_in(text)
    names = _names(strip_accents(text)) & words
    weights: dict[str, float] = {n: NUMBER_WEIGHT for n in numbers}
    weights.update({w: NAME_WEIGHT if w in names else WORD_WEIGHT for w in words})
    if not weights:
        return None
    return Fact(text=text, weights=weights, numbers=frozenset(numbers))


def key_facts(reference: str, limit: int = MAX_FACTS) -> tuple[list[Fact], int]:
    """The reference's facts (at most ``limit``) and how many more were left out."""
    facts = []
    for sentence in split_sentences(reference):
        if sentence.heading:
            continue
        for clause in _CLAUSE_END.split(sentence.text):
            fact = fact_of(clause)
            if fact is not None:
                facts.append(fact)
    return facts[:limit], max(0, len(facts) - limit)


def held_share(fact: Fact, terms: set[str]) -> float:
    """The weighted share of the fact's terms found in ``terms`` (a chunk's terms), 0..1."""
    total = fact.weight
    return sum(w for t, w in fact.weights.items() if t in terms) / total if total else 0.0


def holds_numbers(fact: Fact, terms: set[str]) -> bool:
    """Whether every number of the fact is among ``terms``."""
    return fact.numbers <= terms
