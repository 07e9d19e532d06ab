"""The whole corpus as one search index for the coverage check: no filters, no recency, every chunk a candidate.

The corpus comes from a ``kind: builtin`` target file (its corpus and chunking, so chunk ids match what that
RAG retrieves) or from a corpus folder / ``.jsonl`` file (default chunking). Chunks are found by BM25 and by
the packaged embeddings (``use``), fused by reciprocal rank; chunk embeddings are cached on disk by content,
so a second check re-embeds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from ragreplay.diagnosis.facts import terms_in
from ragreplay.errors import ConfigError, InputProblem
from ragreplay.local.embeddings import CachedEmbedder, Embedder, default_cache_dir, get_embedder
from ragreplay.targets.builtin_rag import retrieval as rt
from ragreplay.targets.builtin_rag.chunking import Chunk
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig, ChunkingConfig
from ragreplay.targets.builtin_rag.corpus import Corpus, load_corpus
from ragreplay.targets.builtin_rag.index import CorpusIndex, encode, query_text
from ragreplay.targets.builtin_rag.text import tokenize
from ragreplay.targets.config import read_target_file

CANDIDATES = 20
"""Chunks each retriever (BM25, dense) proposes before fusion."""
_TARGET_SUFFIXES = (".yaml", ".yml")


def load_corpus_of(path: Path) -> tuple[Corpus, ChunkingConfig]:
    """The corpus and chunking named by ``--corpus``: a builtin target file, a corpus folder or a ``.jsonl``."""
    if path.is_file() and path.suffix.lower() in _TARGET_SUFFIXES:
        spec = read_target_file(path)
        if not isinstance(spec.target, BuiltinTargetConfig):
            raise ConfigError(
                str(
                    InputProblem(
                        str(path),
                        None,
                        "target.kind",
                        f"is {spec.target.kind!r}: the coverage check reads a corpus",
                        "pass a 'kind: builtin' target file or the corpus folder itself",
                    )
                )
            )
        return load_corpus(path.parent / spec.target.corpus, str(path)), spec.target.chunking
    if not path.exists():
        fix = "pass a 'kind: builtin' target file, a folder of .md/.txt documents or a .jsonl corpus"
        raise ConfigError(str(InputProblem("--corpus", None, None, f"{path} does not exist", fix)))
    return load_corpus(path, "--corpus"), ChunkingConfig()


@dataclass(frozen=True)
class Candidate:
    """A chunk found for a text: its position in the index, fused rank score and embedding cosine."""

    index: int
    fused: float
    cosine: float


class CorpusSearch:
    """BM25 + embedding search over every chunk, with each chunk's fact terms (see :mod:`.facts`)."""

    def __init__(self, index: CorpusIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder
        self.chunk_terms = [terms_in(f"{index.documents[c.doc_index].title}\n{c.text}") for c in index.chunks]

    @classmethod
    def build(
        cls, corpus: Corpus, chunking: ChunkingConfig, embedder: Embedder | None = None
    ) -> CorpusSearch:
        """Chunk and index the corpus; ``embedder`` replaces the packaged ``use`` model (tests)."""
        inner = embedder if embedder is not None else cast(Embedder, get_embedder("use"))
        cached = CachedEmbedder(inner, default_cache_dir() / "corpus")
        return cls(CorpusIndex.build(corpus.documents, chunking, cached), inner)

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk of the corpus, in document order."""
        return self.index.chunks

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings of ``texts`` (unit length, one row each)."""
        return encode(self.embedder, [query_text(self.embedder.name, t) for t in texts])

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """The cosine of ``vector`` with every chunk."""
        if self.index.chunk_vectors is None or not self.chunks:
            return np.zeros(len(self.chunks), dtype=np.float32)
        scores: np.ndarray = self.index.chunk_vectors @ vector
        return scores

    def candidates(self, text: str, vector: np.ndarray, n: int = CANDIDATES) -> list[Candidate]:
        """The chunks closest to ``text`` by BM25 and by embedding, fused by reciprocal rank, best first."""
        everything = np.ones(len(self.chunks), dtype=bool)
        cosines = self.cosines(vector)
        lexical = rt.top_indices(self.index.bm25_scores(tokenize(text)), everything, n, True)
        dense = rt.top_indices(cosines, everything, n)
        return [Candidate(i, score, float(cosines[i])) for i, score in rt.rrf_fuse([lexical, dense])]
