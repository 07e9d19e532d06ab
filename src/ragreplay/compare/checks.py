"""Judging hygiene for a comparison, on top of :mod:`ragreplay.judges.hygiene` (family and language rules).

The expected language of an answer is the case's ``language`` tag when it names a language the detector knows
(``nl``, ``NL`` and ``nl-BE`` are Dutch), else the detected language of the question; citations such as
``[doc#3]`` are ignored when detecting. The detector is :mod:`ragreplay.judges.language` (py3langid's model,
loaded on first use).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ragreplay.judges import hygiene, language

_CITATION = re.compile(r"\[[^\]]*\]")
_SUBTAG = re.compile(r"[-_]")


def detect_language(text: str) -> str | None:
    """The ISO 639 code of ``text``'s language without its citations, or ``None`` when unsure."""
    return language.detect_language(_CITATION.sub(" ", text))


def expected_language(question: str, tags: Mapping[str, str]) -> str | None:
    """The language an answer should be in: a ``language`` tag the detector knows, else the question's."""
    tagged = _SUBTAG.split(tags.get("language", "").strip().lower(), maxsplit=1)[0]
    if tagged and language.is_supported(tagged):
        return tagged
    return detect_language(question)


def is_wrong_language(answer: str, expected: str | None) -> bool:
    """Whether ``answer`` is confidently in another language than ``expected`` (unsure is never wrong)."""
    return expected is not None and language.in_other_language(_CITATION.sub(" ", answer), expected)


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
