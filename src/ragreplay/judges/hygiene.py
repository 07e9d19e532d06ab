"""Judging hygiene: a judge of the same model family as a generator, and an answer in the wrong language.

**Model family rule.** A spec's family is the first word of its model name, independent of the provider:

1. drop the provider (``openai:``, ``ollama:``, ...), an organisation path (``meta-llama/``), a fine-tune
   marker (``ft:``), a cloud vendor prefix (``anthropic.`` on Bedrock, ``meta-``) and an ollama tag (``:8b``);
2. lowercase, and keep the leading letters: the name is cut at the first digit (a version number or size,
   ``llama3``, ``qwen2.5``, ``gpt-4.1``) or separator (``-``, ``_``, ``.``, ``/``, space);
3. a few known aliases map onto one family (``chatgpt`` -> ``gpt``, ``mixtral``/``codestral``/``ministral`` ->
   ``mistral``, ``qwq`` -> ``qwen``, ``codellama`` -> ``llama``).

So ``gpt-4.1`` and ``gpt-4.1-mini`` are both ``gpt``; ``claude-3-5-sonnet`` and ``claude-sonnet-4`` are
``claude``; ``llama-3.1-70b``, ``llama3:8b`` and ``meta-llama/Meta-Llama-3-8B-Instruct`` are ``llama``;
``gemini-1.5-pro`` and ``gemini-2.0-flash`` are ``gemini``. Local judges (``local``) and the shipped fake
(``fake:``) have no family: they are rules, with no taste for any model's writing.

**Language.** :func:`wrong_language` compares the languages :func:`ragreplay.judges.language.detect_language`
(py3langid's model, 139 language codes) finds in the question and the answer; an unsure detection (short, mixed or
unknown text) is never a wrong language.

:func:`detect_en_nl` is the older English/Dutch rule, kept only for the local FIT judge's ``translation`` feature
(its shipped weights were fitted with it): it counts English and Dutch function words that the other language
does not share (``in``, ``is``, ``was``, ``we``, ``of``, ``die``, ``door`` are left out) and gives a language only
with at least :data:`MIN_HITS` of its words and at least :data:`MARGIN` times the other's count. It knows no
third language: French and Spanish text is ``None`` or, with Dutch-looking function words, ``nl``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from ragreplay.judges.language import detect_language as _detect
from ragreplay.judges.language import in_other_language

Language = Literal["en", "nl"]

NO_FAMILY_PROVIDERS = frozenset({"local", "fake"})
_VENDOR_PREFIXES = ("anthropic.", "meta.", "amazon.", "mistral.", "cohere.", "us.", "eu.", "meta-", "ft:")
_ALIASES = {
    "chatgpt": "gpt",
    "mixtral": "mistral",
    "codestral": "mistral",
    "ministral": "mistral",
    "qwq": "qwen",
    "codellama": "llama",
}
_LEADING_LETTERS = re.compile(r"[a-z]+")

EN_WORDS = frozenset(
    "the a an and or to on for with are were be been it this that these those you your i my our they their "
    "he she his her can do does did what how when where who which why if not no yes at by from have has will "
    "would should could there after before about much many any get got all than then only also just may must".split()
)
NL_WORDS = frozenset(
    "de het een en van op voor met zijn waren wordt worden dat dit deze je jouw jij ik mijn wij onze kan kun "
    "mag moet wat hoe wanneer waar wie welke waarom als niet geen ja bij uit naar heb hebt heeft zal zou er "
    "hun ze hij zij ook nog om tot na dan maar hoeveel krijg krijgt u uw dus te meer zo alle alleen elke moeten"
    " mogen".split()
)
MIN_HITS = 2
"""A text needs at least this many function words of a language to be given that language."""
MARGIN = 2.0
"""...and at least this many times as many as of the other language."""

_WORD = re.compile(r"[^\W\d_]+")


def model_family(spec: str) -> str | None:
    """The family of a ``provider:model`` spec by the rule in the module docstring; ``None`` for local and
    fake judges or a name with no leading letters."""
    spec = spec.strip()
    provider, sep, model = spec.partition(":")
    if provider.lower() in NO_FAMILY_PROVIDERS or (not sep and provider.lower().startswith("local")):
        return None
    name = (model if sep else spec).strip().lower()
    if name.startswith("ft:"):
        name = name[3:]
    name = name.rsplit("/", 1)[-1]
    changed = True
    while changed:
        changed = False
        for prefix in _VENDOR_PREFIXES:
            if name.startswith(prefix):
                name, changed = name[len(prefix) :], True
    match = _LEADING_LETTERS.match(name)
    if match is None:
        return None
    return _ALIASES.get(match.group(), match.group())


def same_family(judge_spec: str, generator_specs: Iterable[str]) -> str | None:
    """A warning when the judge shares a model family with any generator (judges favour their own family's
    writing), naming the judge, the generators and the family; ``None`` when there is nothing to warn of."""
    family = model_family(judge_spec)
    if family is None:
        return None
    shared = [g for g in dict.fromkeys(generator_specs) if model_family(g) == family]
    if not shared:
        return None
    return (
        f"the judge {judge_spec} and the generator{'s' if len(shared) > 1 else ''} {', '.join(shared)} are "
        f"of the same model family ({family!r}); a judge tends to prefer answers written by its own family. "
        "Fix: judge with a model of another family, or read the preference with that bias in mind"
    )


def language_counts(text: str) -> dict[Language, int]:
    """How many English and Dutch function words ``text`` holds."""
    words = [w.lower() for w in _WORD.findall(text)]
    return {"en": sum(w in EN_WORDS for w in words), "nl": sum(w in NL_WORDS for w in words)}


def detect_en_nl(text: str) -> Language | None:
    """``"en"`` or ``"nl"`` when the function words say so clearly; ``None`` when short, mixed or other (the FIT
    judge's feature; reports use :func:`ragreplay.judges.language.detect_language`)."""
    counts = language_counts(text)
    en, nl = counts["en"], counts["nl"]
    if en >= MIN_HITS and en >= MARGIN * nl:
        return "en"
    if nl >= MIN_HITS and nl >= MARGIN * en:
        return "nl"
    return None


def wrong_language(question: str, answer: str) -> bool:
    """True when both the question's and the answer's language are detected and they differ."""
    asked = _detect(question)
    return asked is not None and in_other_language(answer, asked)
