"""Which language a text is in, for the wrong-language flags of compare and shadow reports and the dashboard.

The model is py3langid's (a maintained fork of langid.py: a naive Bayes classifier over byte n-grams, trained on
139 language codes, languages and a few regional or historic varieties; shipped inside the wheel, nothing is
downloaded). It is imported and loaded on the first call (about 1-1.5 s and 130 MB), never on
``ragreplay --help``; a call then costs about 0.1-0.3 ms per answer of 180 characters (docs/judges.md,
``benchmarks/language_detection.py``).

:func:`detect_language` answers an ISO 639 code only when it is sure, else ``None``:

- fewer than :data:`MIN_WORDS` words or :data:`MIN_LETTERS` letters ("OK", "25", "Ja.", "€2,45") is ``None``;
- the model's probability for its best language must reach :data:`MIN_CONFIDENCE` ("Zie het handboek." is
  Afrikaans or Dutch at about one half each: ``None``);
- code-switched text: each sentence with enough letters is classified on its own, and the whole text's language
  must hold at least :data:`DOMINANT_SHARE` of the letters of the sentences the model is sure of; an answer that is
  half Dutch, half English is ``None``, one Dutch sentence with an English term in it stays Dutch.

Only the first :data:`MAX_CHARS` characters are read. The local FIT judge does not use this detector: its
``translation`` feature keeps :func:`ragreplay.judges.hygiene.detect_en_nl`, the English/Dutch function-word rule
its shipped weights were fitted with.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Protocol

MIN_WORDS = 2
"""A text needs at least this many words to be given a language."""
MIN_LETTERS = 12
"""...and at least this many letters (digits, signs and citation marks do not count)."""
MIN_CONFIDENCE = 0.7
"""...and the model's probability of its best language must be at least this."""
DOMINANT_SHARE = 0.7
"""Share of the letters of the confidently classified sentences that must be in the whole text's language."""
MAX_CHARS = 1000
"""Characters of a text read for detection: the start of a long answer tells its language, and the cost of a
call grows with the text (the model walks its bytes in Python)."""
NOT_A_LANGUAGE = "zxx"
"""The model's label for text with no linguistic content (code, tables of numbers): reported as ``None``."""

_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


class _Identifier(Protocol):
    """The part of py3langid's ``LanguageIdentifier`` used here."""

    @property
    def labels(self) -> list[str]:
        """Every language code the model can answer."""

    def classify(self, text: str) -> tuple[str, float]:
        """The best language of ``text`` and its probability."""


@cache
def _identifier() -> _Identifier:
    """py3langid's model with probabilities, loaded once (imported here so that the CLI starts without it)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier: _Identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return identifier


@cache
def supported_languages() -> tuple[str, ...]:
    """The ISO 639 codes :func:`detect_language` can return, sorted (loads the model)."""
    return tuple(sorted(code for code in _identifier().labels if code != NOT_A_LANGUAGE))


def is_supported(code: str) -> bool:
    """Whether ``code`` (lowercase ISO 639) is a language :func:`detect_language` can return."""
    return code in supported_languages()


def _letters(text: str) -> int:
    return sum(len(word) for word in _WORD.findall(text))


def _classify(text: str) -> str | None:
    """The model's language for ``text`` when it is sure (:data:`MIN_CONFIDENCE`), else ``None``."""
    code, probability = _identifier().classify(text)
    if probability < MIN_CONFIDENCE or code == NOT_A_LANGUAGE:
        return None
    return code


def _screen(text: str) -> str | None:
    """The whole text's language when it is long enough and the model is sure, before the code-switch check."""
    words = _WORD.findall(text)
    if len(words) < MIN_WORDS or sum(len(word) for word in words) < MIN_LETTERS:
        return None
    return _classify(text)


def _dominates(text: str, code: str) -> bool:
    """Whether ``code`` holds :data:`DOMINANT_SHARE` of the letters of the sentences the model is sure of."""
    sized = [(s, n) for s in _SENTENCE_END.split(text) if (n := _letters(s)) >= MIN_LETTERS]
    if len(sized) < 2:
        return True
    same = other = 0
    for sentence, letters in sized:
        found = _classify(sentence)
        if found == code:
            same += letters
        elif found is not None:
            other += letters
    return same >= DOMINANT_SHARE * (same + other)


def detect_language(text: str) -> str | None:
    """The ISO 639 code of the language ``text`` is in (``"en"``, ``"nl"``, ``"fr"``...), or ``None`` when it is
    too short, the model is unsure, or no language dominates a code-switched text (see the module docstring)."""
    text = text[:MAX_CHARS]
    code = _screen(text)
    return code if code is not None and _dominates(text, code) else None


def in_other_language(text: str, expected: str) -> bool:
    """Whether ``text`` is surely in a language other than ``expected``: ``detect_language(text)`` is neither
    ``None`` nor ``expected``. Cheaper than calling it: a text whose whole reads as ``expected`` is settled by one
    call to the model, without the per-sentence check (so a shadow report's answers cost one call each)."""
    text = text[:MAX_CHARS]
    code = _screen(text)
    return code is not None and code != expected and _dominates(text, code)
