"""Writing the answer from retrieved chunks: extractive composition, or the prompt for a generating model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragreplay.core.chat import ChatMessage, ChatRequest
from ragreplay.targets.builtin_rag.index import CorpusIndex, Hit
from ragreplay.targets.builtin_rag.text import content_tokens

NOT_FOUND = "I could not find this in the documents."
GENERATE_PROMPT_VERSION = "builtin-generate-v1"
OVERLAP_WEIGHT = 0.5
"""Weight of the question-token overlap next to the embedding cosine when scoring a sentence."""
RANK_WEIGHT = 0.05
"""Bonus ``RANK_WEIGHT / rank`` for sentences of higher-ranked chunks, so ties favour the best chunk."""
MIN_WORDS = 3

_SYSTEM = (
    "You answer questions about company documents. Use only the numbered context passages. "
    "After each statement, cite the passage id in square brackets, e.g. [doc#2]. If the passages do not "
    f"contain the answer, reply exactly: {NOT_FOUND}"
)


@dataclass(frozen=True)
class Picked:
    """A sentence chosen for an extractive answer, with the chunk it is cited from."""

    text: str
    chunk_id: str
    score: float


def pick_sentences(
    index: CorpusIndex,
    hits: Sequence[Hit],
    question: str,
    question_vector: np.ndarray | None,
    max_sentences: int,
) -> list[Picked]:
    """The sentences of the retrieved chunks that best match the question, best first.

    A chunk offers every whole sentence of its document that overlaps it (so a sentence cut by a chunk
    boundary is quoted whole); headings and sentences under three words are skipped; a sentence offered
    by several chunks is cited from the best-ranked one. Score: embedding cosine (when vectors exist) +
    ``OVERLAP_WEIGHT`` x idf-weighted share of question tokens in the sentence or its section heading +
    ``RANK_WEIGHT / chunk rank``.
    """
    weights = token_weights(content_tokens(question), index.idf)
    seen: set[tuple[int, int]] = set()
    picked: list[Picked] = []
    for rank, hit in enumerate(hits, start=1):
        d = hit.chunk.doc_index
        for s_index, sentence in enumerate(index.sentences[d]):
            if sentence.end <= hit.chunk.start or sentence.start >= hit.chunk.end:
                continue
            if sentence.heading or len(sentence.text.split()) < MIN_WORDS or (d, s_index) in seen:
                continue
            seen.add((d, s_index))
            overlap = weighted_overlap(weights, index.sentence_tokens[d][s_index])
            cosine = 0.0
            if question_vector is not None and index.sentence_vectors:
                cosine = float(index.sentence_vectors[d][s_index] @ question_vector)
            score = cosine + OVERLAP_WEIGHT * overlap + RANK_WEIGHT / rank
            picked.append(Picked(sentence.text, hit.chunk.id, score))
    picked.sort(key=lambda p: -p.score)
    return picked[:max_sentences]


def token_weights(wanted: set[str], idf: dict[str, float]) -> dict[str, float]:
    """The idf of each question token; a word the corpus never uses gets the highest idf."""
    top = max(idf.values(), default=1.0)
    return {t: idf.get(t, top) for t in wanted}


def weighted_overlap(weights: dict[str, float], tokens: set[str]) -> float:
    """Share of the question's tokens found in ``tokens``, each weighted (rare words count more)."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in tokens) / total if total else 0.0


def compose_extractive(picked: Sequence[Picked], hits: Sequence[Hit]) -> str:
    """The answer text: each picked sentence followed by its citation ``[doc#n]``.

    Without a usable sentence, the best chunk's text is quoted with its citation.
    """
    if not hits:
        return NOT_FOUND
    if not picked:
        return f"{hits[0].chunk.text.strip()} [{hits[0].chunk.id}]"
    return " ".join(f"{p.text} [{p.chunk_id}]" for p in picked)


def generate_request(question: str, hits: Sequence[Hit]) -> ChatRequest:
    """The chat request asking a model to answer ``question`` from the retrieved chunks, citing their ids."""
    passages = "\n\n".join(f"[{h.chunk.id}]\n{h.chunk.text.strip()}" for h in hits)
    user = f"Context passages:\n\n{passages}\n\nQuestion: {question}"
    return ChatRequest(
        messages=(ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)),
        temperature=0.0,
        prompt_version=GENERATE_PROMPT_VERSION,
        task="generate",
        hints={"question": question, "contexts": [h.chunk.text for h in hits]},
    )
