"""The per-side signals of the local pairwise judge (English and Dutch); the model lives in ``local_pairwise``.

Everything here is plain text handling plus one batch of sentence embeddings per pair. Texts are embedded in
sorted order, whichever side they come from, so judging (A, B) and (B, A) sees the very same vectors.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date

import numpy as np

from ragreplay.core.pairwise import PairwiseSide
from ragreplay.judges import signals as sig

MAX_UNITS = 30
"""Answer sentences checked for support (the rest of a runaway answer adds nothing)."""
DETAIL_SATURATES = 80
"""Distinct content terms at which ``detail`` reaches 1 (log scale): more distinct facts and names count, up to
about a paragraph; repeating or padding adds no new terms."""
LENGTH_SATURATES = 3000
"""Characters at which ``length`` reaches 1 (log scale): a completeness proxy within limits. On RAGChecker's dev
half "the longer answer wins" is the best signal read from the answers alone (0.596 on decided pairs); capping
the length at 2,000 or 3,000 characters ranks those pairs as the raw length does, a cap at 1,000 or less worse."""
MAX_CHUNK_SENTENCES = 60
"""Sentences read from one chunk."""
RELEVANCE_SATURATES = 0.4
"""USE cosine above which an answer counts as plainly on topic: the model sees relevance capped here, so it
tells on-topic from off-topic answers without rewarding an answer that echoes the question's words."""
REFERENCE_BETA = 1.25
"""``ref_fscore`` weighs recall of the reference's tokens this many times precision (F-beta): a grader with a
reference answer asks whether an answer says what the reference says (completeness) as well as whether what
it says is in the reference. On RAGChecker's dev half, beta from 1.1 to 1.3 ranks pairs alike; see
docs/local_judges.md for the figures and the cross-validation that chose it."""

_LINE_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,3}[.)]|[ivxIVX]{1,4}[.)]|[a-zA-Z][.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ITEM = re.compile(r"(?<=[.!?;,])\s+")
_NAME_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_HEDGE = re.compile(
    r"\b(i think|i believe|i guess|i'm not certain|probably|perhaps|maybe|it depends|as an ai"
    r"|ik denk|volgens mij|misschien|waarschijnlijk|het hangt ervan af|dat hangt ervan af)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(sure|certainly|of course|absolutely|great question|good question|thanks? (?:you )?for (?:your|the) "
    r"question|i(?:'d| would) be (?:happy|glad) to|happy to help|let me (?:help|explain|check)"
    r"|natuurlijk|zeker|goede vraag|bedankt voor (?:je|uw) vraag|graag)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SideSignals:
    """What the judge measured on one side; see the module docstring of ``local_pairwise`` for each field."""

    grounded: float | None
    recency: float | None
    first_relevance: float
    answer_relevance: float
    term_coverage: float
    refusal: bool
    hedging: bool
    filler: bool
    question_copy: float
    repeated_items: float
    repeated_phrases: float
    word_variety: float
    substance: float
    ref_cosine: float | None = None
    ref_f1: float | None = None
    ref_recall: float | None = None
    ref_numbers: float | None = None
    detail: float = 0.0
    ref_fscore: float | None = None
    length: float = 0.0
    supporting_chunks: tuple[str, ...] = field(default=(), compare=False)

    @staticmethod
    def feature_names() -> tuple[str, ...]:
        """The names :meth:`features` returns."""
        return (
            "grounded",
            "recency",
            "first_relevance",
            "answer_relevance",
            "term_coverage",
            "refusal",
            "hedging",
            "filler",
            "question_copy",
            "repeated_items",
            "repeated_phrases",
            "word_variety",
            "substance",
            "ref_cosine",
            "ref_f1",
            "ref_recall",
            "ref_numbers",
            "detail",
            "ref_fscore",
            "length",
        )

    def features(self) -> dict[str, float]:
        """The model's inputs: an unknown grounding, recency or closeness to the reference is the neutral 0.5
        (the same on both sides, so it drops out), relevance is capped at :data:`RELEVANCE_SATURATES`."""
        values = asdict(self)
        out = {n: float(values[n]) if values[n] is not None else 0.5 for n in self.feature_names()}
        for name in ("first_relevance", "answer_relevance"):
            out[name] = min(out[name], RELEVANCE_SATURATES)
        return out


@dataclass(frozen=True)
class PairSignals:
    """Both sides' signals and the cosine of the two answers (symmetric)."""

    a: SideSignals
    b: SideSignals
    similarity: float


def sentences(text: str) -> list[str]:
    """Sentences and list items of ``text``, list markers ("1.", "-", "a)") removed, empty pieces dropped."""
    out: list[str] = []
    for line in text.splitlines():
        line = _LINE_MARKER.sub("", line).strip()
        out.extend(s.strip() for s in _SENTENCE.split(line) if any(c.isalnum() for c in s))
    return out


def content_terms(text: str) -> set[str]:
    """Normalised tokens of ``text`` that carry meaning (function words, EN and NL, removed)."""
    return {t for t in sig.answer_tokens(text) if t not in sig.FUNCTION_WORDS and (len(t) > 2 or t.isdigit())}


def _matches(term: str, tokens: set[str], prefixes: set[str]) -> bool:
    if term in tokens:
        return True
    if len(term) < 5:
        return False
    # inflection ("policies"/"policy") by a shared 5-letter stem; Dutch compounds ("verlof" in "zwangerschapsverlof")
    return term[:5] in prefixes or any(term in t for t in tokens if len(t) > len(term))


def term_coverage(question: str, tokens: Sequence[str]) -> float:
    """Share of the question's content terms the answer mentions (exact, same stem, or inside a compound)."""
    terms = content_terms(question)
    if not terms:
        return 1.0
    have = set(tokens)
    prefixes = {t[:5] for t in have if len(t) >= 5}
    return sum(_matches(t, have, prefixes) for t in terms) / len(terms)


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def question_copy(tokens: Sequence[str], question_tokens: Sequence[str], n: int = 4) -> float:
    """Share of the answer's word ``n``-grams that occur in the question (parroting it scores near 1)."""
    grams = _ngrams(tokens, n)
    if not grams:
        return 0.0
    asked = set(_ngrams(question_tokens, n))
    return sum(g in asked for g in grams) / len(grams)


def repeated_items(text: str) -> float:
    """Share of sentences / list items / comma-separated items that repeat an earlier one."""
    items: list[str] = []
    for line in text.splitlines():
        line = _LINE_MARKER.sub("", line)
        items.extend(" ".join(sig.answer_tokens(piece)) for piece in _ITEM.split(line))
    items = [i for i in items if i]
    return 1.0 - len(set(items)) / len(items) if len(items) > 1 else 0.0


def repeated_phrases(tokens: Sequence[str], n: int = 3) -> float:
    """Share of word trigrams that repeat an earlier one (a generation loop scores near 1)."""
    grams = _ngrams(tokens, n)
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def word_variety(tokens: Sequence[str], window: int = 15) -> float:
    """Moving-average type/token ratio over ``window`` words (length-neutral, unlike a plain ratio)."""
    if not tokens:
        return 0.0
    if len(tokens) <= window:
        return len(set(tokens)) / len(tokens)
    spans = [len(set(tokens[i : i + window])) / window for i in range(len(tokens) - window + 1)]
    return float(np.mean(spans))


@dataclass
class _Side:
    """One side's texts, prepared before the single embedding batch."""

    side: PairwiseSide
    tokens: list[str]
    first: str
    units: list[str]
    chunk_sentences: list[str]
    chunk_owner: list[str]
    chunk_tokens: list[set[str]]
    chunk_numbers: list[set[str]]
    chunk_names: list[set[str]]

    @classmethod
    def prepare(cls, side: PairwiseSide) -> _Side:
        parts = sentences(side.answer)
        units = [s for s in parts if len(sig.answer_tokens(s)) >= 3][:MAX_UNITS]
        if not units and parts:
            units = [side.answer.strip()]
        chunk_sentences, owner, numbers, names = [], [], [], []
        for chunk in side.contexts:
            if not chunk.text:
                continue
            chunk_numbers = sig.numbers(chunk.text)
            chunk_names = set(sig.answer_tokens(chunk.text))
            for s in sentences(chunk.text)[:MAX_CHUNK_SENTENCES]:
                chunk_sentences.append(s)
                owner.append(chunk.id)
                numbers.append(chunk_numbers)
                names.append(chunk_names)
        return cls(
            side,
            sig.answer_tokens(side.answer),
            parts[0] if parts else "",
            units,
            chunk_sentences,
            owner,
            [set(sig.answer_tokens(s)) for s in chunk_sentences],
            numbers,
            names,
        )

    def texts(self) -> list[str]:
        whole = [self.side.answer.strip()] if self.first else []
        return [*whole, *([self.first] if self.first else []), *self.units, *self.chunk_sentences]

    def grounding(
        self, vec: Mapping[str, np.ndarray], thresholds: Mapping[str, float]
    ) -> tuple[float | None, list[str]]:
        """Share of answer sentences some chunk sentence supports, and the chunks that support them.

        A sentence is supported by a chunk sentence that is close enough (cosine) or contains enough of its
        content terms, from a chunk that states every number and every name the sentence states: "27 days" is
        not supported by a chunk that says 25, nor "approved by Mark Jansen" by one that names Anna de Vries,
        however similar the wording.
        """
        if not self.chunk_sentences or not self.units:
            return None, []
        chunk_matrix = np.stack([vec[s] for s in self.chunk_sentences])
        supported, used = 0, []
        for unit in self.units:
            stated, named = sig.numbers(unit), names(unit)
            allowed = np.array(
                [
                    stated <= nums and named <= chunk_names
                    for nums, chunk_names in zip(self.chunk_numbers, self.chunk_names, strict=True)
                ]
            )
            if not allowed.any():
                continue
            cosines = np.where(allowed, chunk_matrix @ vec[unit], -1.0)
            terms = content_terms(unit)
            contained = np.array(
                [
                    len(terms & toks) / len(terms) if terms and ok else 0.0
                    for toks, ok in zip(self.chunk_tokens, allowed, strict=True)
                ]
            )
            best_cos, best_cont = int(np.argmax(cosines)), int(np.argmax(contained))
            close = float(cosines[best_cos]) >= thresholds["support_cosine"]
            if close or float(contained[best_cont]) >= thresholds["support_containment"]:
                supported += 1
                used.append(self.chunk_owner[best_cos if close else best_cont])
        return supported / len(self.units), used


def recency(
    a_cited: Sequence[str], b_cited: Sequence[str], a: PairwiseSide, b: PairwiseSide
) -> tuple[float | None, float | None]:
    """Each side's cited documents placed between the oldest (0) and newest (1) dated chunk of both sides."""
    dated: dict[str, date] = {}
    for side in (a, b):
        ids = {c.id for c in side.contexts}
        dated.update({cid: d for cid, d in side.context_dates.items() if cid in ids})
    if not dated or min(dated.values()) == max(dated.values()):
        return None, None
    lo, hi = min(dated.values()), max(dated.values())
    span = (hi - lo).days

    def place(cited: Sequence[str]) -> float | None:
        days = [(dated[c] - lo).days / span for c in cited if c in dated]
        return float(np.mean(days)) if days else None

    return place(a_cited), place(b_cited)


def names(text: str) -> set[str]:
    """Capitalised words after the first of ``text`` (names by capitalisation), lowercased as tokens are."""
    words = _NAME_WORD.findall(text)[1:]
    return {
        w.lower().replace("'", "") for w in words if w[0].isupper() and w.lower() not in sig.FUNCTION_WORDS
    }


def detail(tokens: Sequence[str]) -> float:
    """Distinct content terms on a log scale, 0 to 1 at :data:`DETAIL_SATURATES`: how much an answer says."""
    distinct = {t for t in tokens if t not in sig.FUNCTION_WORDS and (len(t) > 2 or t.isdigit())}
    return min(1.0, math.log1p(len(distinct)) / math.log1p(DETAIL_SATURATES))


def length(text: str) -> float:
    """The answer's length in characters on a log scale, 0 to 1 at :data:`LENGTH_SATURATES` (a refusal's length
    is 0: it says nothing, however many words it takes)."""
    return min(1.0, math.log1p(len(text.strip())) / math.log1p(LENGTH_SATURATES))


def reference_recall(reference: str, tokens: Sequence[str]) -> float:
    """Share of the reference's content terms the answer holds (exact, same stem, or inside a compound)."""
    return term_coverage(reference, tokens)


def token_fscore(reference: str, answer: str, beta: float = REFERENCE_BETA) -> float:
    """Token F-beta of ``answer`` against ``reference`` (the judges' multilingual normalisation, tokens counted
    with repeats): recall of the reference's tokens weighs ``beta`` times precision. Both empty: 1.0; one empty:
    0.0."""
    ref_tokens, tokens = sig.answer_tokens(reference), sig.answer_tokens(answer)
    if not ref_tokens or not tokens:
        return float(not ref_tokens and not tokens)
    common = sum((Counter(ref_tokens) & Counter(tokens)).values())
    if not common:
        return 0.0
    precision, recall = common / len(tokens), common / len(ref_tokens)
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def quantities(text: str) -> set[tuple[str, str]]:
    """``(unit, number)`` pairs: each number of ``text`` with the word after it ("25 vacation days": vacation)."""
    tokens = sig.answer_tokens(text)
    found = set()
    for i, token in enumerate(tokens[:-1]):
        number = sig.numbers(token)
        unit = tokens[i + 1]
        if number and not sig.numbers(unit) and unit not in sig.FUNCTION_WORDS:
            found.add((unit, next(iter(number))))
    return found


def reference_numbers(reference: str, answer: str) -> float:
    """1 minus the share of the answer's amounts that contradict the reference: the reference gives an amount of
    the same unit, never this one ("30 days" against a reviewed "25 days": 0). 1 when no unit is shared."""
    known: dict[str, set[str]] = {}
    for unit, number in quantities(reference):
        known.setdefault(unit, set()).add(number)
    shared = [(u, n) for u, n in quantities(answer) if u in known]
    if not shared:
        return 1.0
    return 1.0 - sum(n not in known[u] for u, n in shared) / len(shared)


def pair_signals(
    encoder: sig.TextEncoder,
    question: str,
    a: PairwiseSide,
    b: PairwiseSide,
    thresholds: Mapping[str, float],
    reference: str | None = None,
) -> PairSignals:
    """Measure both sides of a pair with one embedding batch (texts in sorted order, so the batch is the same
    whichever side is A). With a ``reference`` (a reviewed or gold answer), each side's closeness to it too."""
    reference = reference.strip() if reference and reference.strip() else None
    sides = [_Side.prepare(a), _Side.prepare(b)]
    texts = sorted({question, *sides[0].texts(), *sides[1].texts(), *([reference] if reference else [])})
    vec = dict(zip(texts, encoder.encode(texts), strict=True))
    refusals = [bool(s.first) and sig.is_refusal(s.side.answer) for s in sides]
    # A refusal states nothing to check against the chunks: its grounding is unknown, not zero.
    grounding = [
        (None, []) if r else s.grounding(vec, thresholds) for s, r in zip(sides, refusals, strict=True)
    ]
    # Without chunk text we cannot tell which chunks an answer leans on: all its retrieved chunks count
    # (a refusal leans on none).
    cited = [
        [] if refused else g[1] if s.chunk_sentences else [c.id for c in s.side.contexts]
        for s, g, refused in zip(sides, grounding, refusals, strict=True)
    ]
    recent = recency(cited[0], cited[1], a, b)
    q_tokens = sig.answer_tokens(question)
    out = []
    for s, (grounded, used), r, refused in zip(sides, grounding, recent, refusals, strict=True):
        answered = bool(s.first)
        closeness: dict[str, float | None] = dict.fromkeys(
            ("ref_cosine", "ref_f1", "ref_fscore", "ref_recall", "ref_numbers")
        )
        if reference is not None:
            closeness = {
                "ref_cosine": float(vec[reference] @ vec[s.side.answer.strip()]) if answered else 0.0,
                "ref_f1": sig.token_f1_multilingual(reference, s.side.answer),
                "ref_fscore": token_fscore(reference, s.side.answer),
                "ref_recall": reference_recall(reference, s.tokens) if answered else 0.0,
                "ref_numbers": reference_numbers(reference, s.side.answer),
            }
        first_vec = vec[s.first] if answered else None
        whole_vec = vec[s.side.answer.strip()] if answered else None
        out.append(
            SideSignals(
                grounded=grounded,
                recency=r,
                first_relevance=float(vec[question] @ first_vec) if first_vec is not None else 0.0,
                answer_relevance=float(vec[question] @ whole_vec) if whole_vec is not None else 0.0,
                term_coverage=term_coverage(question, s.tokens) if answered else 0.0,
                refusal=refused,
                hedging=answered and not refused and bool(_HEDGE.search(s.first)),
                filler=answered and bool(_FILLER.match(s.first)),
                question_copy=question_copy(s.tokens, q_tokens),
                repeated_items=repeated_items(s.side.answer),
                repeated_phrases=repeated_phrases(s.tokens),
                word_variety=word_variety(s.tokens),
                substance=min(len(s.tokens), 10) / 10,
                detail=detail(s.tokens),
                length=length(s.side.answer) if answered and not refused else 0.0,
                **closeness,
                supporting_chunks=tuple(used),
            )
        )
    similarity = 0.0
    if sides[0].first and sides[1].first:
        similarity = float(vec[a.answer.strip()] @ vec[b.answer.strip()])
    return PairSignals(out[0], out[1], similarity)
