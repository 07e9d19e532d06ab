"""The built index of a corpus (chunks, BM25, vectors, sentences) and the retrieval pipeline over it."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import bm25s
import numpy as np

from ragreplay.local.embeddings import Embedder
from ragreplay.targets.builtin_rag import retrieval as rt
from ragreplay.targets.builtin_rag.chunking import Chunk, chunk_corpus
from ragreplay.targets.builtin_rag.config import ChunkingConfig, RetrievalConfig
from ragreplay.targets.builtin_rag.corpus import Document
from ragreplay.targets.builtin_rag.text import Sentence, split_sentences, tokenize

# Encoding is CPU-bound and the packaged models are shared by every target in the process; one encode at
# a time keeps them safe without relying on the model's own thread safety.
_ENCODE_LOCK = threading.Lock()


def encode(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``embedder.encode(texts)``, one call at a time across the process."""
    with _ENCODE_LOCK:
        return embedder.encode(texts)


def query_text(embedder_name: str, text: str) -> str:
    """The text to embed for a question (e5 wants a ``query: `` prefix)."""
    return f"query: {text}" if embedder_name == "e5" else text


def passage_text(embedder_name: str, text: str) -> str:
    """The text to embed for a chunk or sentence (e5 wants a ``passage: `` prefix)."""
    return f"passage: {text}" if embedder_name == "e5" else text


def sentence_embedding_text(sentence: Sentence) -> str:
    """What is embedded for a sentence: its section heading, then the sentence (headings alone as is)."""
    if sentence.heading or not sentence.section:
        return sentence.text
    return f"{sentence.section}: {sentence.text}"


def inverse_document_frequencies(token_sets: Sequence[set[str]]) -> dict[str, float]:
    """``log(1 + N / df)`` of every token over ``token_sets`` (the chunks)."""
    df: dict[str, int] = {}
    for tokens in token_sets:
        for token in tokens:
            df[token] = df.get(token, 0) + 1
    n = len(token_sets)
    return {token: float(np.log1p(n / count)) for token, count in df.items()}


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk and the score of the last stage that ranked it."""

    chunk: Chunk
    score: float


@dataclass(frozen=True)
class Retrieval:
    """What retrieval found for one question, and what it left out."""

    hits: list[Hit]
    filters: dict[str, str]
    filtered_out: int
    superseded: int


@dataclass
class CorpusIndex:
    """Chunks with their BM25 index and (optionally) their vectors, and every document's sentences."""

    documents: Sequence[Document]
    chunks: list[Chunk]
    chunk_docs: np.ndarray
    bm25: bm25s.BM25 | None
    chunk_tokens: list[set[str]]
    sentences: list[list[Sentence]]
    sentence_tokens: list[list[set[str]]] = field(default_factory=list)
    idf: dict[str, float] = field(default_factory=dict)
    chunk_vectors: np.ndarray | None = None
    sentence_vectors: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def build(
        cls, documents: Sequence[Document], chunking: ChunkingConfig, embedder: Embedder | None
    ) -> CorpusIndex:
        """Chunk and index ``documents``; with an ``embedder``, embed chunks and sentences document by
        document (so a cached embedder re-embeds only documents that changed).

        Chunks are indexed (BM25 and embedding) with their document's title in front of their text.
        """
        chunks = chunk_corpus(documents, chunking.size, chunking.overlap)
        indexed_texts = [f"{documents[c.doc_index].title}\n{c.text}" for c in chunks]
        token_lists = [tokenize(t) for t in indexed_texts]
        bm25 = None
        if chunks:
            bm25 = bm25s.BM25()
            bm25.index(token_lists, show_progress=False)
        sentences = [split_sentences(d.text) for d in documents]
        index = cls(
            documents=documents,
            chunks=chunks,
            chunk_docs=np.array([c.doc_index for c in chunks], dtype=np.int64),
            bm25=bm25,
            chunk_tokens=[set(t) for t in token_lists],
            sentences=sentences,
            sentence_tokens=[[set(tokenize(f"{s.section} {s.text}")) for s in doc] for doc in sentences],
            idf=inverse_document_frequencies([set(t) for t in token_lists]),
        )
        if embedder is not None:
            index._embed(embedder, indexed_texts)
        return index

    def _embed(self, embedder: Embedder, indexed_texts: list[str]) -> None:
        # Two batches per document: its chunks, and its sentences. Sentences do not depend on the chunking,
        # so configurations that differ only in chunking share the cached sentence vectors.
        name = embedder.name
        by_doc: list[list[int]] = [[] for _ in self.documents]
        for i, chunk in enumerate(self.chunks):
            by_doc[chunk.doc_index].append(i)
        chunk_vectors: list[np.ndarray] = []
        self.sentence_vectors = []
        for d, doc_sentences in enumerate(self.sentences):
            chunk_texts = [passage_text(name, indexed_texts[i]) for i in by_doc[d]]
            sentence_texts = [passage_text(name, sentence_embedding_text(s)) for s in doc_sentences]
            if chunk_texts:
                chunk_vectors.append(encode(embedder, chunk_texts))
            self.sentence_vectors.append(
                encode(embedder, sentence_texts) if sentence_texts else np.zeros((0, 1), dtype=np.float32)
            )
        self.chunk_vectors = (
            np.vstack(chunk_vectors).astype(np.float32)
            if chunk_vectors
            else np.zeros((0, 1), dtype=np.float32)
        )

    def bm25_scores(self, query_tokens: list[str]) -> np.ndarray:
        """BM25 score of every chunk for the query tokens (zeros for an empty query)."""
        if self.bm25 is None or not query_tokens:
            return np.zeros(len(self.chunks), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(query_tokens), dtype=np.float32)

    def retrieve(
        self,
        question: str,
        query_vector: np.ndarray | None,
        tags: Mapping[str, str],
        cfg: RetrievalConfig,
    ) -> Retrieval:
        """Run the pipeline: filters, candidates, fusion, recency, rerank, top k."""
        filters = rt.resolve_filters(cfg.filters, tags)
        allowed = rt.filter_mask(self.documents, self.chunk_docs, filters)
        filtered_out = int(len(allowed) - allowed.sum())
        tokens = tokenize(question)
        limit = max(cfg.candidates, cfg.top_k)
        cosines = self._cosines(query_vector)
        ranked: list[tuple[int, float]]
        if cfg.mode == "bm25":
            scores = self.bm25_scores(tokens)
            ranked = [(i, float(scores[i])) for i in rt.top_indices(scores, allowed, limit, True)]
        elif cfg.mode == "dense":
            ranked = [(i, float(cosines[i])) for i in rt.top_indices(cosines, allowed, limit)]
        else:
            lexical = rt.top_indices(self.bm25_scores(tokens), allowed, limit, True)
            dense = rt.top_indices(cosines, allowed, limit)
            ranked = rt.rrf_fuse([lexical, dense], cfg.rrf_k)
        superseded = 0
        if cfg.recency.enabled:
            kept, superseded = rt.drop_superseded([i for i, _ in ranked], self.doc_of)
            keep = set(kept)
            ranked = [pair for pair in ranked if pair[0] in keep]
        if cfg.rerank.enabled and ranked:
            head = [i for i, _ in ranked[: cfg.rerank.candidates]]
            query_tokens = set(tokens)
            overlaps = [rt.token_overlap(query_tokens, self.chunk_tokens[i]) for i in head]
            ranked = rt.rerank(head, cosines[head], overlaps) + ranked[len(head) :]
        hits = [Hit(self.chunks[i], score) for i, score in ranked[: cfg.top_k]]
        return Retrieval(hits, filters, filtered_out, superseded)

    def doc_of(self, chunk_index: int) -> Document:
        """The document a chunk belongs to."""
        return self.documents[self.chunks[chunk_index].doc_index]

    def _cosines(self, query_vector: np.ndarray | None) -> np.ndarray:
        if query_vector is None or self.chunk_vectors is None or not self.chunks:
            return np.zeros(len(self.chunks), dtype=np.float32)
        scores: np.ndarray = self.chunk_vectors @ query_vector
        return scores
