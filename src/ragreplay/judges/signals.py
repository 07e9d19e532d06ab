"""Cheap, pure signals of whether two answers to one question say the same thing (English and Dutch).

Each function takes plain strings and returns a number, a set or a flag; nothing here loads a model. The one
model-backed signal, :func:`embedding_cosine`, takes the embedder as an argument. :func:`compute_signals` gathers
them all into the named features the local judges score.

Directional helpers (``*_missing(a, b)``) ask what ``a`` has that ``b`` lacks; :func:`compute_signals` turns them
into symmetric features, so swapping the two answers gives the same signals.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

ARTICLES = frozenset(["a", "an", "the", "de", "het", "een"])
"""English and Dutch articles, dropped by :func:`normalize_multilingual`."""

NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor cannot n't geen niet nooit niets niemand noch".split()
)
"""Words that flip a statement, English and Dutch."""

NUMBER_WORDS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
# Plain "een" is also the Dutch indefinite article ("een dag" = "a day"), so only the accented "één" counts as 1.
NUMBER_WORDS.update(
    {
        w: i
        for i, w in enumerate(
            "nul één twee drie vier vijf zes zeven acht negen tien elf twaalf dertien veertien vijftien "
            "zestien zeventien achttien negentien twintig".split()
        )
    }
)
NUMBER_WORDS.update(
    {"eén": 1, "thirty": 30, "forty": 40, "fifty": 50, "dertig": 30, "veertig": 40, "vijftig": 50}
)

MONTHS: dict[str, int] = {}
for _i, _names in enumerate(
    [
        "january januari jan",
        "february februari feb",
        "march maart mar mrt",
        "april apr",
        "may mei",
        "june juni jun",
        "july juli jul",
        "august augustus aug",
        "september sep sept",
        "october oktober oct okt",
        "november nov",
        "december dec",
    ],
    start=1,
):
    for _name in _names.split():
        MONTHS[_name] = _i
# Month words that are also ordinary words or names; they count only next to a day number.
_AMBIGUOUS_MONTHS = frozenset(["may", "jan", "mar", "dec", "sep", "jun", "jul", "aug", "apr", "nov", "oct"])

FUNCTION_WORDS = frozenset(
    """a an the this that these those it its i you your we our they their he she his her my me us them there
    here in on at of for to from by with as and or but if when where what who whom whose which why how is are
    was were be been being do does did have has had can could will would should shall may might must not no yes
    please note also all any each every some most many more less after before during per since until within
    de het een dit dat deze die ik je jij u uw we wij ons onze zij ze hij haar zijn hun er hier daar in op aan
    van voor naar met als en of maar als wanneer waar wat wie welke waarom hoe is zijn was waren ben bent
    wordt worden werd heeft hebben had kan kunnen zal zullen moet moeten mag mogen ja nee niet geen let ook
    alle elke ieder sommige meeste veel meer minder na tijdens per sinds tot binnen""".split()
)
"""Common words that are capitalised only because they open a sentence; never taken for names."""

REFUSAL_PATTERNS = re.compile(
    r"\b("
    r"i (?:do not|don't|dont) know|i(?:'m| am) not sure|i (?:could not|couldn't|cannot|can't|was unable to)"
    r" (?:find|answer|determine|locate)|(?:i (?:do not|don't) have|there is no|i have no) (?:enough |any )?"
    r"(?:information|data|details)|no (?:relevant )?information (?:is |was )?(?:available|found|provided)"
    r"|(?:is|are) not (?:mentioned|specified|stated|covered) in|unable to (?:answer|find|provide)"
    r"|cannot be (?:answered|determined)|not able to answer"
    r"|ik weet (?:het )?niet|ik (?:kan|kon) (?:dit |dat |het |er )?(?:niets |niet |geen )(?:vinden|beantwoorden)"
    r"|ik heb (?:daar |hier |er )?(?:geen|onvoldoende) (?:informatie|gegevens)|geen informatie (?:gevonden|beschikbaar)"
    r"|(?:wordt|staat) niet (?:vermeld|genoemd|beschreven)|kan (?:ik )?(?:deze vraag )?niet beantwoorden"
    r")",
    re.IGNORECASE,
)
"""Phrases with which an assistant declines to answer, English and Dutch."""

_ONE_AS_PRONOUN = frozenset("the no any every some each this that which no-one".split())


class _PunctuationTable(dict[int, int | str]):
    """``str.translate``'s table mapping ASCII punctuation and every Unicode punctuation character (category
    ``P*``) to a space, every other character to itself; filled per character on first sight."""

    def __missing__(self, code: int) -> int | str:
        value: int | str = " " if unicodedata.category(chr(code)).startswith("P") else code
        self[code] = value
        return value


_PUNCT_TABLE = _PunctuationTable({ord(c): " " for c in string.punctuation})
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:[.,]\d{3})+(?![\d])|\d+(?:[.,]\d+)?)(?![\w])")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_THOUSANDS = re.compile(r"(?<=\d)[.,](?=\d{3}(?!\d))")
_SENTENCE_END = re.compile(r"[.!?:;]\s+|\n+")


class TextEncoder(Protocol):
    """What :func:`embedding_cosine` needs: ``ragreplay.local.embeddings.Embedder`` fits."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows, one per text."""
        ...


def _strip_punctuation(text: str) -> str:
    return text.translate(_PUNCT_TABLE)


def normalize_multilingual(text: str) -> str:
    """The judges' normalisation, SQuAD's adapted to English and Dutch text in any script: lower-cased (NFC),
    apostrophes and thousands separators deleted, every other punctuation character, ASCII or Unicode (``«``,
    ``—``, ``。``), made a space, English and Dutch articles (a, an, the, de, het, een) dropped, whitespace
    collapsed.

    Not SQuAD v1.1's ``normalize_answer`` (that is :func:`ragreplay.metrics.lexical.normalize_squad`), which
    deletes ASCII punctuation only ("Fujiwara-Familie" -> "fujiwarafamilie", here "fujiwara familie") and drops
    English articles only. "1,000" and "1000" normalise alike.
    """
    text = _THOUSANDS.sub("", unicodedata.normalize("NFC", text.lower().replace("’", "'")))
    text = _strip_punctuation(text.replace("'", ""))
    return " ".join(t for t in text.split() if t not in ARTICLES)


def answer_tokens(text: str) -> list[str]:
    """The tokens of :func:`normalize_multilingual`."""
    return normalize_multilingual(text).split()


def _without(tokens: list[str], ignore: Iterable[str]) -> list[str]:
    drop = set(ignore)
    return [t for t in tokens if t not in drop] if drop else tokens


def token_f1_multilingual(a: str, b: str, ignore: Iterable[str] = ()) -> float:
    """Token F1 between two answers over :func:`normalize_multilingual`'s tokens (counted with repeats, as
    SQuAD's), optionally ignoring some tokens (e.g. the question's words).

    Two answers with no tokens left score 1.0 (SQuAD v1.1: 0.0); one empty side scores 0.0. SQuAD v1.1's own
    figure is :func:`ragreplay.metrics.lexical.token_f1`.
    """
    ta, tb = _without(answer_tokens(a), ignore), _without(answer_tokens(b), ignore)
    if not ta or not tb:
        return float(not ta and not tb)
    common = sum((Counter(ta) & Counter(tb)).values())
    if not common:
        return 0.0
    precision, recall = common / len(tb), common / len(ta)
    return 2 * precision * recall / (precision + recall)


def containment(a: str, b: str, ignore: Iterable[str] = ()) -> float:
    """Share of ``a``'s tokens that occur in ``b`` (1.0 when ``a`` has none)."""
    ta = _without(answer_tokens(a), ignore)
    if not ta:
        return 1.0
    tb = set(answer_tokens(b))
    return sum(t in tb for t in ta) / len(ta)


def exact_match_multilingual(a: str, b: str) -> bool:
    """Whether the two answers are equal after :func:`normalize_multilingual` (SQuAD v1.1's exact match is
    :func:`ragreplay.metrics.lexical.exact_match`)."""
    return normalize_multilingual(a) == normalize_multilingual(b)


def _lower_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text.replace("’", "'"))]


def _canonical_number(raw: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", raw):
        return str(int(re.sub(r"[.,]", "", raw)))  # thousands separators: "1,000" / "1.000"
    value = float(raw.replace(",", "."))  # "3,5" is the Dutch "3.5"
    return str(int(value)) if value.is_integer() else f"{value:g}"


def numbers(text: str) -> set[str]:
    """The numbers in ``text``, canonical: "1,000" = "1.000" = "1000", "3,5" = "3.5", "five" = "vijf" = "5"."""
    found = {_canonical_number(m.group(1)) for m in _NUMBER.finditer(text)}
    words = _lower_words(text)
    for i, word in enumerate(words):
        if word in NUMBER_WORDS and not (word == "one" and i and words[i - 1] in _ONE_AS_PRONOUN):
            found.add(str(NUMBER_WORDS[word]))
    return found


def missing_share(a: set[str], b: set[str]) -> float:
    """Share of the items of ``a`` that ``b`` lacks (0.0 when ``a`` is empty)."""
    return len(a - b) / len(a) if a else 0.0


def numbers_missing(a: str, b: str) -> float:
    """Share of the numbers in ``a`` that ``b`` does not mention."""
    return missing_share(numbers(a), numbers(b))


def dates(text: str) -> set[str]:
    """Date atoms in ``text``: years ("y2020"), months ("m03") and month-days ("m03d05"), EN and NL month names.

    "5 March 2020", "March 5, 2020", "5 maart 2020" and "2020-03-05" all give {"y2020", "m03", "m03d05"}.
    """
    atoms = {f"y{m.group(1)}" for m in _YEAR.finditer(text)}
    for m in _ISO_DATE.finditer(text):
        month, day = int(m.group(2)), int(m.group(3))
        if 1 <= month <= 12 and 1 <= day <= 31:
            atoms.update({f"m{month:02d}", f"m{month:02d}d{day:02d}"})
    words = _lower_words(text)
    for i, word in enumerate(words):
        named = MONTHS.get(word)
        if named is None:
            continue
        neighbours = [
            w for w in (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "") if w.isdigit()
        ]
        days = [d for d in neighbours if 1 <= int(d) <= 31]
        if word in _AMBIGUOUS_MONTHS and not days and not any(_YEAR.fullmatch(w) for w in neighbours):
            continue  # "may" / "jan" without a day or year beside them are a verb / a name
        atoms.add(f"m{named:02d}")
        atoms.update(f"m{named:02d}d{int(d):02d}" for d in days)
    return atoms


def date_mismatch(a: str, b: str) -> float:
    """How far the dates disagree: 0.0 when either side has none or one side's dates cover the other's.

    Otherwise the smaller of the two directional missing shares, so "1990" vs "from 1990 to 1995" is 0.0 and
    "2011" vs "July 2018" is 1.0.
    """
    da, db = dates(a), dates(b)
    if not da or not db:
        return 0.0
    return min(missing_share(da, db), missing_share(db, da))


def has_negation(text: str) -> bool:
    """Whether ``text`` contains a negation word (not, no, never, n't, geen, niet, nooit, ...)."""
    return any(w in NEGATIONS or w.endswith("n't") for w in _lower_words(text))


def negation_mismatch(a: str, b: str) -> bool:
    """Whether exactly one of the two answers is negated."""
    return has_negation(a) != has_negation(b)


def entities(text: str) -> set[str]:
    """Name-like tokens, lowercased: capitalised words that are not common words opening a sentence.

    A capitalised first word counts unless it is a common (function) word, so a bare "Utrecht" answer is a name.
    """
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for word in _WORD.findall(sentence):
            if not word[0].isupper():
                continue
            lower = word.lower()
            if lower in FUNCTION_WORDS or lower in NUMBER_WORDS or lower in MONTHS:
                continue
            found.add(lower.replace("'", ""))
    return found


def entities_missing(a: str, b: str) -> float:
    """Share of ``a``'s names that appear nowhere in ``b`` (in any case)."""
    ea = entities(a)
    if not ea:
        return 0.0
    tb = set(answer_tokens(b))
    return sum(e not in tb for e in ea) / len(ea)


def length_ratio(a: str, b: str) -> float:
    """Shorter answer's token count over the longer one's (1.0 when both are empty)."""
    la, lb = len(answer_tokens(a)), len(answer_tokens(b))
    return min(la, lb) / max(la, lb) if max(la, lb) else 1.0


def is_refusal(text: str) -> bool:
    """Whether the answer declines to answer ("I don't know", "I could not find ...", "ik weet het niet", ...)."""
    return bool(REFUSAL_PATTERNS.search(text.replace("’", "'"))) or not text.strip()


def question_overlap(question: str, answer: str) -> float:
    """Share of the answer's tokens that are words of the question (an answer that only echoes it scores 1.0)."""
    ta = answer_tokens(answer)
    if not ta:
        return 0.0
    tq = set(answer_tokens(question))
    return sum(t in tq for t in ta) / len(ta)


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Character ``n``-grams of the normalised text, padded with spaces (robust to compounds and inflection)."""
    padded = f" {normalize_multilingual(text)} "
    return {padded[i : i + n] for i in range(len(padded) - n + 1)} if padded.strip() else set()


def char_overlap(a: str, b: str) -> float:
    """Share of ``a``'s character trigrams found in ``b`` ("vakantiedagen" still meets "vakantie dagen")."""
    ga = char_ngrams(a)
    return len(ga & char_ngrams(b)) / len(ga) if ga else 1.0


def embedding_cosine(embedder: TextEncoder, a: str, b: str) -> float:
    """Cosine of the two answers' embeddings, both encoded in one batch (the rows are unit length)."""
    vectors = embedder.encode([a, b])
    return float(np.clip(vectors[0] @ vectors[1], -1.0, 1.0))


SIGNAL_NAMES: tuple[str, ...] = (
    "cosine",
    "token_f1",
    "novel_f1",
    "containment_max",
    "containment_min",
    "number_conflict",
    "number_gap",
    "date_mismatch",
    "negation_mismatch",
    "entity_conflict",
    "entity_gap",
    "length_ratio",
    "refusal_mismatch",
    "both_refuse",
    "question_echo",
    "char_overlap",
)
"""The features :func:`compute_signals` returns, in order."""


def compute_signals(question: str, a: str, b: str, cosine: float) -> dict[str, float]:
    """All signals for one pair of answers, symmetric in ``a`` and ``b``; ``cosine`` from :func:`embedding_cosine`.

    - ``token_f1``: :func:`token_f1_multilingual` (the feature keeps the name the fitted models use; it is not
      SQuAD v1.1's token F1);
    - ``novel_f1``: the same token F1 ignoring the question's words (what each answer adds to the question);
    - ``containment_max`` / ``_min``: the larger / smaller of the two containments (one answer inside the other);
    - ``*_conflict``: both sides have numbers (names) and neither side's cover the other's;
      ``*_gap``: one side has numbers (names) the other lacks;
    - ``question_echo``: the larger share of an answer's tokens taken from the question;
    - ``char_overlap``: the larger of the two character-trigram containments.
    """
    q_tokens = set(answer_tokens(question))
    c_ab, c_ba = containment(a, b), containment(b, a)
    n_ab, n_ba = numbers_missing(a, b), numbers_missing(b, a)
    e_ab, e_ba = entities_missing(a, b), entities_missing(b, a)
    refuse_a, refuse_b = is_refusal(a), is_refusal(b)
    values = {
        "cosine": cosine,
        "token_f1": token_f1_multilingual(a, b),
        "novel_f1": token_f1_multilingual(a, b, ignore=q_tokens),
        "containment_max": max(c_ab, c_ba),
        "containment_min": min(c_ab, c_ba),
        "number_conflict": min(n_ab, n_ba),
        "number_gap": max(n_ab, n_ba),
        "date_mismatch": date_mismatch(a, b),
        "negation_mismatch": float(negation_mismatch(a, b)),
        "entity_conflict": min(e_ab, e_ba),
        "entity_gap": max(e_ab, e_ba),
        "length_ratio": length_ratio(a, b),
        "refusal_mismatch": float(refuse_a != refuse_b),
        "both_refuse": float(refuse_a and refuse_b),
        "question_echo": max(question_overlap(question, a), question_overlap(question, b)),
        "char_overlap": max(char_overlap(a, b), char_overlap(b, a)),
    }
    return {name: float(values[name]) for name in SIGNAL_NAMES}
