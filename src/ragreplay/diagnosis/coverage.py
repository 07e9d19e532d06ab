"""The coverage check of one question: does any chunk of the corpus hold the key facts of its reference?

1. The reference is split into key facts (:mod:`.facts`).
2. The closest chunks of the whole corpus are found by BM25 (question + reference) and by the embedding of the
   reference, fused (:mod:`.corpus_search`).
3. Each candidate's *fact score* is the weight-averaged share of every fact's terms it holds; candidates are
   ranked by fact score + :data:`COSINE_WEIGHT` x cosine and the best :data:`BEST_CHUNKS` are kept.
4. A fact is *held* when one of the best chunks holds at least :data:`FACT_HELD` of its weighted terms and every
   one of its numbers. The question's ``held`` is the held facts' share of the total fact weight; ``cosine``
   the best chunks' highest cosine with the reference.
5. ``covered`` when ``held >= COVERED_HELD``; ``missing`` when ``held < MISSING_HELD`` and
   ``cosine < PARAPHRASE_COSINE`` (no chunk states the facts nor says something close); ``partly`` otherwise.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.ranking_diff import document_of
from ragreplay.diagnosis.corpus_search import Candidate, CorpusSearch
from ragreplay.diagnosis.facts import Fact, held_share, holds_numbers, key_facts

FACT_HELD = 0.6
COVERED_HELD = 0.7
MISSING_HELD = 0.3
PARAPHRASE_COSINE = 0.5
"""With the packaged ``use`` embedder: a chunk this close to the reference says something near it."""
COSINE_WEIGHT = 0.5
BEST_CHUNKS = 3
SNIPPET_CHARS = 240
MAX_REFERENCE_CHARS = 5000
"""A longer reference is skipped (named in the report), not checked."""

Status = Literal["covered", "partly", "missing", "skipped"]
STATUSES: tuple[Status, ...] = ("covered", "partly", "missing", "skipped")
THRESHOLDS = {
    "fact_held": FACT_HELD,
    "covered_held": COVERED_HELD,
    "missing_held": MISSING_HELD,
    "paraphrase_cosine": PARAPHRASE_COSINE,
    "best_chunks": BEST_CHUNKS,
}


class ChunkMatch(BaseModel):
    """One of the closest chunks: id, document, fact score (0-1), cosine with the reference, a snippet."""

    model_config = ConfigDict(frozen=True)

    id: str
    document: str
    fact_score: float
    cosine: float
    snippet: str


class FactCheck(BaseModel):
    """One key fact: the best share of it a chunk holds, in which chunk, and whether it is held."""

    model_config = ConfigDict(frozen=True)

    fact: str
    share: float
    held: bool
    chunk: str | None


class JudgeCheck(BaseModel):
    """The LLM check of one question: its verdict, facts it found held / stated, or why it is unreadable."""

    model_config = ConfigDict(frozen=True)

    verdict: Literal["covered", "partly", "missing"] | None
    facts_held: int = 0
    facts: int = 0
    reason: str = ""
    problem: str = ""
    error: str | None = None
    cached: bool = False
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """A call of a model whose price is unknown: its dollars are not in ``cost_usd`` (see ``core/costs``)."""


class QuestionCoverage(BaseModel):
    """The coverage of one question (``skipped`` with a ``reason`` when it could not be checked)."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    status: Status
    reason: str = ""
    held: float = 0.0
    cosine: float = 0.0
    facts: list[FactCheck] = []
    facts_left_out: int = 0
    closest: list[ChunkMatch] = []
    tags: list[str] = []
    judge: JudgeCheck | None = None


def classify(held: float, cosine: float) -> Status:
    """``covered`` / ``partly`` / ``missing`` from the held share and the best cosine (module docstring)."""
    if held >= COVERED_HELD:
        return "covered"
    if held < MISSING_HELD and cosine < PARAPHRASE_COSINE:
        return "missing"
    return "partly"


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _fact_score(facts: list[Fact], terms: set[str]) -> float:
    total = sum(f.weight for f in facts)
    return sum(f.weight * held_share(f, terms) for f in facts) / total if total else 0.0


def skipped(row_id: str, question: str, reason: str, tags: list[str]) -> QuestionCoverage:
    """A question that was not checked, and why."""
    return QuestionCoverage(id=row_id, question=question, status="skipped", reason=reason, tags=tags)


def check_question(
    search: CorpusSearch, row_id: str, question: str, reference: str, tags: list[str]
) -> QuestionCoverage:
    """The coverage of one question with a reference (CPU-bound: embeds the reference once)."""
    if len(reference) > MAX_REFERENCE_CHARS:
        return skipped(row_id, question, f"reference over {MAX_REFERENCE_CHARS} characters", tags)
    facts, left_out = key_facts(reference)
    if not facts:
        return skipped(row_id, question, "the reference states no fact (no content word nor number)", tags)
    vector = search.vectors([reference])[0]
    found: list[Candidate] = search.candidates(f"{question}\n{reference}", vector)
    scored = [(c, _fact_score(facts, search.chunk_terms[c.index])) for c in found]
    scored.sort(key=lambda pair: -(pair[1] + COSINE_WEIGHT * pair[0].cosine))
    best = scored[:BEST_CHUNKS]
    checks = [_check_fact(search, fact, [c for c, _ in best]) for fact in facts]
    total = sum(f.weight for f in facts)
    held = sum(f.weight for f, check in zip(facts, checks, strict=True) if check.held) / total
    cosine = max((c.cosine for c, _ in best), default=0.0)
    closest = [
        ChunkMatch(
            id=search.chunks[c.index].id,
            document=document_of(search.chunks[c.index].id),
            fact_score=round(score, 4),
            cosine=round(c.cosine, 4),
            snippet=snippet(search.chunks[c.index].text),
        )
        for c, score in best
    ]
    return QuestionCoverage(
        id=row_id,
        question=question,
        status=classify(held, cosine),
        held=round(held, 4),
        cosine=round(cosine, 4),
        facts=checks,
        facts_left_out=left_out,
        closest=closest,
        tags=tags,
    )


def _check_fact(search: CorpusSearch, fact: Fact, best: list[Candidate]) -> FactCheck:
    top_share, top_chunk, held = 0.0, None, False
    for c in best:
        terms = search.chunk_terms[c.index]
        share = held_share(fact, terms)
        ok = share >= FACT_HELD and holds_numbers(fact, terms)
        if (ok, share) > (held, top_share):
            top_share, top_chunk, held = share, search.chunks[c.index].id, ok
    return FactCheck(fact=fact.text, share=round(top_share, 4), held=held, chunk=top_chunk)
