"""Judging hygiene: a judge of the same model family as a generator, and answers in the wrong language.

Language is told apart by function words (stop words) only: cheap, no model, and enough to tell an English
answer from a Dutch one. Text with too few function words is "unknown" and never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

STOPWORDS: Mapping[str, frozenset[str]] = {
    "en": frozenset(
        "the a an and or of to in on for with is are was were be been it this that you your i my we our "
        "can do does what how when where who which if not no yes at by from as have has will would should "
        "there their they he she his her after before per".split()
    ),
    "nl": frozenset(
        "de het een en of van in op voor met is zijn was waren wordt worden dat dit je jouw jij ik mijn we "
        "wij onze kan kun mag moet wat hoe wanneer waar wie welke als niet geen ja bij door uit naar heb "
        "hebt heeft zal zou er hun ze hij zij ook nog om tot na dan maar".split()
    ),
    "de": frozenset(
        "der die das ein eine und oder von zu im auf für mit ist sind war waren wird werden dass du dein ich "
        "mein wir unser kann darf muss was wie wann wo wer welche wenn nicht kein ja bei durch aus nach habe "
        "hat es sie er auch noch um bis dann aber".split()
    ),
    "fr": frozenset(
        "le la les un une et ou de du des en dans sur pour avec est sont était être que ce cette tu ton je "
        "mon nous notre peut doit quoi comment quand où qui quel si ne pas non oui chez par au aux avoir "
        "il elle ils elles aussi encore mais".split()
    ),
}
"""Function words per language (ISO 639-1 code)."""

MIN_HITS = 2
"""A text needs at least this many function words of its best language to be given a language."""

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_CITATION = re.compile(r"\[[^\]]*\]")

FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt", "openai-gpt"),
    ("o1", "openai-gpt"),
    ("o3", "openai-gpt"),
    ("o4", "openai-gpt"),
    ("claude", "anthropic-claude"),
    ("gemini", "google-gemini"),
    ("gemma", "google-gemini"),
    ("llama", "meta-llama"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("qwen", "qwen"),
    ("deepseek", "deepseek"),
    ("phi", "microsoft-phi"),
    ("command", "cohere-command"),
)
"""Model-name prefixes and the family they belong to."""

LOCAL_PREFIXES = ("local", "local:")


def detect_language(text: str) -> str | None:
    """The language code whose function words ``text`` uses most, or ``None`` when unclear."""
    words = [w.lower() for w in _WORD.findall(_CITATION.sub(" ", text))]
    if not words:
        return None
    hits = {lang: sum(w in stop for w in words) for lang, stop in STOPWORDS.items()}
    ranked = sorted(hits.items(), key=lambda kv: kv[1], reverse=True)
    (best, n_best), (_, n_second) = ranked[0], ranked[1]
    if n_best < MIN_HITS or n_best <= n_second:
        return None
    return best


def expected_language(question: str, tags: Mapping[str, str]) -> str | None:
    """The language an answer should be in: the case's ``language`` tag when it is a known code, else the
    question's detected language."""
    tagged = tags.get("language", "").strip().lower()
    if tagged in STOPWORDS:
        return tagged
    return detect_language(question)


def is_wrong_language(answer: str, expected: str | None) -> bool:
    """Whether ``answer`` is confidently in another language than ``expected`` (unknown is never wrong)."""
    if expected is None:
        return False
    found = detect_language(answer)
    return found is not None and found != expected


def model_family(spec: str) -> str | None:
    """The model family of a ``provider:model`` spec (``openai:gpt-4.1-mini`` -> ``openai-gpt``); ``None`` for
    local judges and fakes, which share nothing with a generating model."""
    provider, _, model = spec.partition(":")
    if provider in ("local", "fake") or not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, family in FAMILIES:
        if name.startswith(prefix):
            return family
    return f"{provider}:{name.split('-')[0]}"


def same_family_warnings(judge_specs: Iterable[str], generators: Mapping[str, str]) -> list[str]:
    """A warning per (judge, generator) pair of one model family. ``generators``: side name -> model spec."""
    warnings = []
    for judge in dict.fromkeys(judge_specs):
        family = model_family(judge)
        if family is None:
            continue
        for side, spec in sorted(generators.items()):
            if model_family(spec) == family:
                warnings.append(
                    f"hygiene.same_family: judge {judge} and {side}'s generator {spec} are both {family}; a "
                    "judge tends to prefer its own family's answers. Fix: judge with a model of another family"
                )
    return warnings
