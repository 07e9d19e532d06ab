"""The local rewriter's rule: a follow-up's pronoun replaced by the conversation's subject, nothing else.

"Is it treatable?" after "What is throat cancer?" becomes "Is throat cancer treatable?". The subject is the run of
content words (no stop word inside) that the earlier questions keep coming back to, the latest question's
preferred, longer and capitalised runs a little more. A question that names its own subject before the pronoun
("What is mortadella and where is it from?") and a question without a personal pronoun are left as they are, so a
self-contained question is almost never changed. On TREC CAsT 2019-2020 (dev) this beats leaving the question
unchanged; see docs/benchmarks.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"[^\W\d_][\w'\-]*")
_PRONOUNS = frozenset(["it", "its", "they", "them", "their", "he", "she", "him", "his", "her"])
_POSSESSIVES = frozenset(["its", "their", "his"])
_STOP = frozenset(
    """a an the of in on at to for from by with about into over under and or but if then than so as is are was
    were be been being do does did done have has had can could should would will shall may might must what which
    who whom whose when where why how that this these those there here it its they them their he she him his her
    you your i me my we our us tell more some any all other others such much many most also just not no yes very
    too only each every both either neither same different please explain describe give list show know want like
    need get make one ones kind type types way ways between among vs versus""".split()
)


def content_runs(text: str) -> list[str]:
    """The runs of consecutive content words of ``text`` ("symptoms", "throat cancer"), possessive 's dropped."""
    runs: list[str] = []
    current: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.lower().endswith("'s"):
            word = word[:-2]
        if word.lower() in _STOP or len(word) < 2:
            if current:
                runs.append(" ".join(current))
                current = []
        else:
            current.append(word)
    if current:
        runs.append(" ".join(current))
    return runs


def conversation_subject(questions: Sequence[str]) -> str | None:
    """The run the earlier ``questions`` keep coming back to (``None`` when they hold no content word)."""
    seen: dict[
        str, tuple[str, int, int]
    ] = {}  # lower-cased run -> (as written, questions holding it, last one)
    for index, question in enumerate(questions):
        for run in dict.fromkeys(content_runs(question)):
            _, count, _ = seen.get(run.lower(), (run, 0, -1))
            seen[run.lower()] = (run, count + 1, index)
    if not seen:
        return None
    latest = len(questions) - 1

    def weight(entry: tuple[str, int, int]) -> float:
        run, count, last = entry
        return count + 0.8 * (last == latest) + 0.3 * len(run.split()) + 0.5 * run[0].isupper()

    return max(seen.values(), key=weight)[0]


def resolve_follow_up(query: str, earlier_questions: Sequence[str]) -> str | None:
    """``query`` with its first personal pronoun replaced by the conversation's subject, or ``None`` when it
    is left as it is (no pronoun, its own subject named before the pronoun, or no subject found)."""
    if not earlier_questions:
        return None
    pronoun = next((m for m in _WORD.finditer(query) if m.group().lower() in _PRONOUNS), None)
    if pronoun is None:
        return None
    before = query[: pronoun.start()]
    if re.search(r"\band\b", before, re.IGNORECASE) and content_runs(before):
        return None  # "What is X and why is it ...": the pronoun is X
    subject = conversation_subject(earlier_questions)
    if subject is None:
        return None
    replacement = subject + "'s" if pronoun.group().lower() in _POSSESSIVES else subject
    return before + replacement + query[pronoun.end() :]
