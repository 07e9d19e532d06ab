"""Judging hygiene for a comparison, on top of :mod:`ragreplay.judges.hygiene` (family and language rules).

The expected language of an answer is the case's ``language`` tag when it names a language the detector knows,
else the detected language of the question; citations such as ``[doc#3]`` are ignored when detecting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ragreplay.judges import hygiene

_CITATION = re.compile(r"\[[^\]]*\]")
KNOWN_LANGUAGES = ("en", "nl")


def detect_language(text: str) -> str | None:
    """The language of ``text`` (``en``/``nl``) without its citations, or ``None`` when unsure."""
    return hygiene.detect_language(_CITATION.sub(" ", text))


def expected_language(question: str, tags: Mapping[str, str]) -> str | None:
    """The language an answer should be in: a known ``language`` tag, else the question's language."""
    tagged = tags.get("language", "").strip().lower()
    if tagged in KNOWN_LANGUAGES:
        return tagged
    return detect_language(question)


def is_wrong_language(answer: str, expected: str | None) -> bool:
    """Whether ``answer`` is confidently in another language than ``expected`` (unsure is never wrong)."""
    if expected is None:
        return False
    found = detect_language(answer)
    return found is not None and found != expected


def same_family_warnings(judge_specs: Iterable[str], generators: Mapping[str, str]) -> list[str]:
    """``hygiene.same_family`` warnings for each judge sharing a family with a side's generating model.

    ``generators``: side name -> model spec of the model that wrote that side's answers.
    """
    warnings = []
    for judge in dict.fromkeys(judge_specs):
        message = hygiene.same_family(judge, sorted(set(generators.values())))
        if message:
            sides = sorted(
                s for s, g in generators.items() if hygiene.model_family(g) == hygiene.model_family(judge)
            )
            warnings.append(f"hygiene.same_family ({', '.join(sides)}): {message}")
    return warnings
