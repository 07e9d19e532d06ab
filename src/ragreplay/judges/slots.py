"""What two answers put in the same slot: numbers by unit, dates, names, roles, permission and polarity.

Overlap signals cannot tell "HR approves" from "your manager approves": the words around the slot are the same
and only the value differs. These readers find the value each answer gives and say when two answers give
different ones. Each conflict is 0.0 or 1.0; ``a`` is the reference (the old answer), ``b`` the new one.

Slot rules that compare the words around a value (names, roles, polarity) only fire when the two answers are
*aligned*: most of their words match in order (:func:`alignment`), so they are two versions of one sentence and
not a short reference against a long answer that mentions other things.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import pairwise

from ragreplay.core.lexicon import ECHO_WORDS, FORBIDDEN, GERMAN_NEGATIONS, PERMITTED, ROLE_WORDS
from ragreplay.judges import signals as sig

ALIGNED = 0.5
"""The :func:`alignment` from which two answers count as versions of one sentence."""

# Citation marks: "[2]", "[^2^]", "^2^", "【2】", superscripts, and bracketed chunk ids ("[leave-2026-en#4]").
_CITATION = re.compile(r"\[\^?[^\s\[\]]{1,100}\^?\]|\^\d{1,3}\^|【\d{1,3}】|[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
# Digits glued to the end of a word: a number that lost its space when a word follows ("has3 lines", "of10
# episodes"), else a citation mark ("episodes1.", "Chelsea1").
_GLUED_NUMBER = re.compile(r"(?<=[^\W\d_]{2})(\d+(?:[.,]\d+)?)(?= [^\W\d_])")
_GLUED_MARK = re.compile(r"(?<=[a-z]{3})\d{1,2}\b")
_YEAR_RANGE = re.compile(r"\b((1[5-9]|20)\d\d)[–-](\d\d)\b")  # "1979–80" is 1979 to 1980
_YEAR_MARK = re.compile(r"\b((?:1[5-9]|20)\d\d)\d{1,2}(?=[.,;)]|\s*$)")  # "in 19741." is 1974 and mark 1
_CAMEL = re.compile(r"(?<=[a-z]{2})(?=[A-Z][a-z])")  # "onNovember", "bandAce": a space lost in extraction
# "first" and "second" are left out: far more often "the first step" and a unit of time than a count.
_ORDINALS = {
    w: i
    for i, w in enumerate(
        "third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), start=3
    )
}
_ABOUT_REFERENCE = re.compile(
    r"\([^()]*\b(?:reference|referentie|referenz|expected answer|old answer|gold answer)\b[^()]*\)"
    r"|\b(?:same as|identical to|as in|zoals in|gelijk aan|wie in) (?:the |de |het |die )?"
    r"(?:reference|referentie|referenz|expected answer|old answer)\b[^.!?]*[.!?]?",
    re.IGNORECASE,
)
_TOKEN = re.compile(
    r"\d{1,3}(?:[.,]\d{3})+(?!\d)|\d+(?:[.,]\d+)?(?:st|nd|rd|th)?|[^\W\d_]+(?:['’][^\W\d_]+)?|&", re.UNICODE
)
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")
_CLAUSE = re.compile(r"(?<![A-Z])[.!?;]\s+|,?\s+\b(?:and|en|und|also|ook|auch)\b\s+|\n+", re.IGNORECASE)
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_NEGATIONS = sig.NEGATIONS | GERMAN_NEGATIONS


def clean(text: str) -> str:
    """The answer without citation marks ("China⁶", "[2]", "episodes1") and remarks about the reference.

    "of10" becomes "of 10"; a parenthesis or sentence that claims to match "the reference" is dropped: it quotes
    the reference, it does not answer.
    """
    text = unicodedata.normalize("NFC", text)
    text = _ABOUT_REFERENCE.sub(" ", text)
    text = _CITATION.sub("", text)
    text = _CAMEL.sub(" ", _YEAR_MARK.sub(r"\1", text))
    text = _GLUED_NUMBER.sub(r" \1", text)
    text = _YEAR_RANGE.sub(lambda m: f"{m.group(1)} - {m.group(2)}{m.group(3)}", text)
    return _GLUED_MARK.sub("", text)


@dataclass(frozen=True)
class Token:
    """One word or number of an answer: its lowercase form and whether it reads as a name."""

    word: str
    name: bool


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[Token, ...]:
    """The cleaned answer's words in order; a capitalised word that is not a common word is a name."""
    out: list[Token] = []
    for sentence in _SENTENCE.split(clean(text)):
        for m in _TOKEN.finditer(sentence):
            raw = m.group(0)
            lower = raw.lower().replace("’", "'")
            common = lower in sig.FUNCTION_WORDS or lower in sig.NUMBER_WORDS or lower in sig.MONTHS
            out.append(Token(lower, raw[0].isupper() and not common and lower not in ROLE_WORDS))
    return tuple(out)


def words(text: str) -> list[str]:
    """The lowercase words of :func:`tokens`."""
    return [t.word for t in tokens(text)]


def alignment(a: str, b: str) -> float:
    """How much of the two answers' word sequences match in order (difflib ratio, 0..1)."""
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def _is_year(word: str) -> bool:
    return bool(re.fullmatch(r"1[5-9]\d\d|20\d\d", word))


def _number(word: str) -> str | None:
    """The canonical value of one token: "25", "1,000", "five", "vijf", "sixth" and "6th" ("6")."""
    if word in sig.NUMBER_WORDS:
        return str(sig.NUMBER_WORDS[word])
    if word in _ORDINALS:
        return str(_ORDINALS[word])
    if word[0].isdigit():
        found = sig.numbers(re.sub(r"(?<=\d)(st|nd|rd|th)$", "", word))
        return found.pop() if found else None
    return None


def numbers_by_unit(text: str) -> dict[str, set[str]]:
    """Non-year numbers by the word that follows them ("25 days" -> {"day": {"25"}}; "" when none follows).

    Years and the day beside a month name are dates, read by :func:`dates`, so a year both answers mention never
    hides a changed amount. "twenty-seven" is 27.
    """
    ws = words(text)
    found: dict[str, set[str]] = {}
    for i, word in enumerate(ws):
        value, after = _number(word), i + 1
        if (
            word in _TENS
            and i + 1 < len(ws)
            and ws[i + 1] in sig.NUMBER_WORDS
            and sig.NUMBER_WORDS[ws[i + 1]] < 10
        ):
            value, after = str(_TENS[word] + sig.NUMBER_WORDS[ws[i + 1]]), i + 2
        elif i and ws[i - 1] in _TENS and word in sig.NUMBER_WORDS:
            continue
        beside_month = any(w in sig.MONTHS for w in ws[max(0, i - 1) : i + 2] if w != word)
        if (
            value is None
            or _is_year(word)
            or (word == "one" and i and ws[i - 1] in {"the", "no", "any", "that"})
        ):
            continue
        if beside_month and word.isdigit() and 1 <= int(word) <= 31:
            continue
        unit = ws[after] if after < len(ws) and ws[after].isalpha() else ""
        unit = "" if unit in sig.FUNCTION_WORDS else unit.rstrip("s")
        found.setdefault(unit, set()).add(value)
    return found


def _close(a: set[str], b: set[str]) -> bool:
    """Whether some value of ``a`` equals or rounds to one of ``b`` (within 2.5%: "2.4" / "2.45", "760" / "759.96")."""
    for x in a:
        for y in b:
            fx, fy = float(x), float(y)
            if fx == fy or abs(fx - fy) <= 0.025 * max(abs(fx), abs(fy)):
                return True
    return False


def number_conflict(a: str, b: str) -> float:
    """1.0 when both give amounts and share none, or give the same unit different amounts ("25 days" / "30 days")."""
    na, nb = numbers_by_unit(a), numbers_by_unit(b)
    all_a, all_b = set().union(*na.values()), set().union(*nb.values())
    if not all_a or not all_b:
        return 0.0
    if not _close(all_a, all_b):
        return 1.0
    shared_units = (set(na) & set(nb)) - {""}
    return float(any(not _close(na[u], nb[u]) for u in shared_units))


def dates(text: str) -> tuple[set[str], set[str], set[str]]:
    """Years, month-days and full dates ("y2021", "m03d01", "2021-03-01") that ``text`` states."""
    ws = words(text)
    years = {f"y{w}" for w in ws if _is_year(w)}
    days: set[str] = set()
    full: set[str] = set()
    for i, word in enumerate(ws):
        month = sig.MONTHS.get(word)
        if month is None:
            continue
        near = ws[max(0, i - 1) : i] + ws[i + 1 : i + 2]
        day = next((w for w in near if w.isdigit() and 1 <= int(w) <= 31), None)
        year = next((w for w in ws[i + 1 : i + 4] if _is_year(w)), None)
        if day is None:
            continue
        days.add(f"m{month:02d}d{int(day):02d}")
        if year is not None:
            full.add(f"{year}-{month:02d}-{int(day):02d}")
    for m in re.finditer(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)", clean(text)):
        mm, dd = int(m.group(2)), int(m.group(3))
        if 1 <= mm <= 12 and 1 <= dd <= 31:
            years.add(f"y{m.group(1)}")
            days.add(f"m{mm:02d}d{dd:02d}")
            full.add(f"{m.group(1)}-{mm:02d}-{dd:02d}")
    return years, days, full


def date_conflict(a: str, b: str) -> float:
    """1.0 when both state full dates, month-days or years and share none at that level."""
    for sa, sb in zip(dates(a), dates(b), strict=True):
        if sa and sb and not sa & sb:
            return 1.0
    return 0.0


def _changed(a: str, b: str) -> list[tuple[Sequence[Token], Sequence[Token]]]:
    """The spans that differ between the two aligned answers, as (a's tokens, b's tokens)."""
    ta, tb = tokens(a), tokens(b)
    matcher = SequenceMatcher(None, [t.word for t in ta], [t.word for t in tb], autojunk=False)
    return [(ta[i1:i2], tb[j1:j2]) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]


def _short_changes(a: str, b: str, most: int = 4) -> list[tuple[Sequence[Token], Sequence[Token]]]:
    """The differing spans of at most ``most`` tokens a side: a value swapped in a slot, not a sentence changed."""
    return [(sa, sb) for sa, sb in _changed(a, b) if len(sa) <= most and len(sb) <= most]


def _same_person(x: set[str], y: set[str]) -> bool:
    """Whether two name spans may name one person: a shared 3-letter start or an initial ("Dave" / "David")."""
    return any(p[:3] == q[:3] or (min(len(p), len(q)) == 1 and p[0] == q[0]) for p in x for q in y)


def name_conflict(a: str, b: str) -> float:
    """1.0 when two aligned sentences put different names in the same place ("approved by Anna" / "by Mark")."""
    if min(len(words(a)), len(words(b))) < 4 or alignment(a, b) < ALIGNED:
        return 0.0
    for span_a, span_b in _short_changes(a, b):
        names_a = {t.word for t in span_a if t.name}
        names_b = {t.word for t in span_b if t.name}
        if names_a and names_b and not _same_person(names_a, names_b):
            return 1.0
    return 0.0


def roles(text: str) -> list[str]:
    """The workplace roles ``text`` names, in order ("human resources" counts as HR)."""
    return _roles([t.word for t in tokens(text)])


def _roles(ws: Sequence[str]) -> list[str]:
    ws = [w.removesuffix("'s") for w in ws]
    found = [ROLE_WORDS[w] for w in ws if w in ROLE_WORDS]
    if any(x == "human" and y == "resources" for x, y in pairwise(ws)):
        found.append("hr")
    return found


def role_conflict(a: str, b: str) -> float:
    """1.0 when aligned answers name different roles in the same short span ("HR approves" / "your manager
    approves"; "the employer pays the employee" / "the employee pays the employer")."""
    if alignment(a, b) < ALIGNED:
        return 0.0
    for span_a, span_b in _short_changes(a, b):
        ra, rb = set(_roles([t.word for t in span_a])), set(_roles([t.word for t in span_b]))
        if ra and rb and ra != rb:
            return 1.0
    return 0.0


def _negations(span: Sequence[Token]) -> int:
    return sum(t.word in _NEGATIONS or t.word.endswith("n't") for t in span)


def _signs(span: Sequence[Token]) -> set[int]:
    return {-1 if t.word in FORBIDDEN else 1 for t in span if t.word in FORBIDDEN or t.word in PERMITTED}


def polarity_conflict(a: str, b: str) -> float:
    """1.0 when aligned answers differ in a short span (three words or fewer a side) by polarity.

    Either the span carries a negation on one side only ("is 20 days" / "is not 20 days", "mag" / "mag niet"), or
    it swaps a granting word for a denying one ("allowed" / "forbidden", "toegestaan" / "verboden", "erlaubt" /
    "verboten", "can" / "cannot"). A whole sentence one answer leaves out is not a slot: it is left to overlap.
    """
    if alignment(a, b) < ALIGNED:
        return 0.0
    for sa, sb in _short_changes(a, b, most=3):
        if _negations(sa) % 2 != _negations(sb) % 2:
            return 1.0
        signs_a, signs_b = _signs(sa), _signs(sb)
        if signs_a and signs_b and not signs_a & signs_b:
            return 1.0
    return 0.0


def _content(text: str) -> list[str]:
    return [w for w in words(text) if w not in sig.FUNCTION_WORDS and w not in ECHO_WORDS]


def _stem(word: str) -> str:
    return word[:5]


def novel_content(question: str, text: str) -> list[str]:
    """The answer's content words that the question does not hold (same 5-letter stem counts as held)."""
    asked = {_stem(w) for w in words(question)}
    return [w for w in _content(text) if _stem(w) not in asked]


def is_echo(question: str, text: str) -> bool:
    """Whether the answer only restates the question ("You asked: how many days ...?"): no content word of its
    own, and most (60%) of the question's content words repeated."""
    asked = {_stem(w) for w in _content(question)}
    if not asked or novel_content(question, text):
        return False
    return len(asked & {_stem(w) for w in _content(text)}) >= 0.6 * len(asked)


def echo_mismatch(question: str, a: str, b: str) -> float:
    """1.0 when the new answer ``b`` only restates the question and the reference ``a`` says something of its own.

    Not the other way round: a reference made of the question's words ("Six Degrees of Separation" to "what is
    the movie about six degrees of separation") is an answer."""
    return float(is_echo(question, b) and not is_echo(question, a) and bool(novel_content(question, a)))


def partial(question: str, a: str, b: str) -> float:
    """1.0 when the new answer ``b`` repeats part of ``a`` and leaves out a whole clause of it.

    ``a`` must be a sentence (eight words or more) with two or more clauses of two content words of their own;
    ``b`` must cover one of them, nothing of another, and add (almost) nothing ``a`` does not say: it is ``a``
    cut short, not another answer.
    """
    if len(words(a)) < 8:
        return 0.0
    clauses = [novel_content(question, c) for c in _CLAUSE.split(clean(a))]
    clauses = [c for c in clauses if len(c) >= 2]
    if len(clauses) < 2:
        return 0.0
    have = {_stem(w) for w in novel_content(question, b)}
    if not have:
        return 0.0
    in_a = {_stem(w) for c in clauses for w in c}
    if len(have - in_a) > max(1, len(have) // 5):
        return 0.0
    cover = [sum(_stem(w) in have for w in c) / len(c) for c in clauses]
    return float(max(cover) >= 0.6 and min(cover) == 0.0)
