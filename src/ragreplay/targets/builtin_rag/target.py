"""The built-in reference RAG as a :class:`~ragreplay.ports.Target`, and its factory from configuration."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

from ragreplay.core.chat import ProviderError
from ragreplay.core.ids import content_hash
from ragreplay.core.types import Answer, Case, RetrievedChunk
from ragreplay.errors import describe_exception
from ragreplay.local.embeddings import CachedEmbedder, Embedder, default_cache_dir, get_embedder
from ragreplay.ports import ChatModel
from ragreplay.providers.config import ModelSettings
from ragreplay.providers.registry import ModelFactory
from ragreplay.targets.base import TargetBase
from ragreplay.targets.builtin_rag.answer import (
    NOT_FOUND,
    compose_extractive,
    generate_request,
    pick_sentences,
)
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.builtin_rag.corpus import Corpus, load_corpus
from ragreplay.targets.builtin_rag.index import CorpusIndex, Retrieval, encode, query_text

ALGORITHM_VERSION = "1"
"""Bumped whenever chunking, ranking or answer composition changes, so old runs stay distinguishable."""


class BuiltinTarget(TargetBase):
    """Chunks a corpus, retrieves with BM25 / dense / hybrid, and answers extractively or with a model.

    The index is built on the first :meth:`answer` (or :meth:`prepare`), once, in a worker thread; corpus
    embeddings are cached on disk under ``cache_dir`` by content, so a second run reads them back.
    ``embedder`` replaces the packaged model named in the configuration (tests inject a fake one).
    ``latency_ms`` of an answer does not include building the index.
    """

    def __init__(
        self,
        cfg: BuiltinTargetConfig,
        corpus: Corpus,
        *,
        name: str = "builtin",
        embedder: Embedder | None = None,
        cache_dir: Path | None = None,
        model: ChatModel | None = None,
        factory: ModelFactory | None = None,
    ) -> None:
        self.cfg = cfg
        self.corpus = corpus
        self._name = name
        config = cfg.model_dump(mode="json", exclude={"corpus"})
        self._version = content_hash(
            {"kind": "builtin", "algorithm": ALGORITHM_VERSION, "config": config, "corpus": corpus.digest}
        )
        self._embedder = embedder
        self._cache_dir = cache_dir
        if cfg.answer.mode == "generate" and model is None:
            raise ValueError("answer.mode 'generate' needs a model")
        self._model = model
        self._factory = factory
        self._index: CorpusIndex | None = None
        self._async_lock = asyncio.Lock()
        self._thread_lock = threading.Lock()

    @property
    def index(self) -> CorpusIndex | None:
        """The built index, or ``None`` before the first answer."""
        return self._index

    def _needs_embedder(self) -> bool:
        r = self.cfg.retrieval
        return r.mode != "bm25" or r.rerank.enabled or self.cfg.answer.mode == "extractive"

    def _inner_embedder(self) -> Embedder:
        if self._embedder is None:
            # PackagedEmbedder's ``name`` is a Literal, which mypy will not match to the protocol's str.
            self._embedder = cast(Embedder, get_embedder(self.cfg.retrieval.embedder))
        return self._embedder

    async def prepare(self) -> CorpusIndex:
        """Build the index now (idempotent, safe under concurrent calls) and return it."""
        if self._index is None:
            async with self._async_lock:
                if self._index is None:
                    await asyncio.to_thread(self._build)
        assert self._index is not None
        return self._index

    def _build(self) -> None:
        with self._thread_lock:
            if self._index is not None:
                return
            embedder: Embedder | None = None
            if self._needs_embedder():
                folder = self._cache_dir or default_cache_dir() / "corpus"
                embedder = CachedEmbedder(self._inner_embedder(), folder)
            self._index = CorpusIndex.build(self.corpus.documents, self.cfg.chunking, embedder)

    async def answer(self, question: str, case: Case) -> Answer:
        """Retrieve chunks for ``question`` (with ``case.tags`` for filters) and answer from them.

        ``extra`` holds ``mode``, ``answer_mode``, the resolved ``filters``, ``filtered_out`` (chunks the
        filters excluded), ``superseded`` (candidates dropped by recency), ``reranked``, ``stages_ms``
        (``retrieval`` and ``generation``: composing the extract, or the model's call) and, when generating,
        ``model``. With nothing retrieved the answer is :data:`NOT_FOUND` with no contexts and no model call.
        A failed model call comes back as ``Answer.error``.
        """
        index = await self.prepare()
        start = time.perf_counter()
        retrieval, text, stages = await asyncio.to_thread(
            self._retrieve_and_extract, index, question, case.tags
        )
        extra: dict[str, Any] = {
            "mode": self.cfg.retrieval.mode,
            "answer_mode": self.cfg.answer.mode,
            "filters": retrieval.filters,
            "filtered_out": retrieval.filtered_out,
            "superseded": retrieval.superseded,
            "reranked": self.cfg.retrieval.rerank.enabled,
            "stages_ms": stages,
        }
        contexts = tuple(
            RetrievedChunk(id=h.chunk.id, score=round(h.score, 6), text=h.chunk.text) for h in retrieval.hits
        )
        if not retrieval.hits:
            return Answer(text=NOT_FOUND, latency_ms=_since(start), extra=extra)
        if text is not None:
            return Answer(text=text, contexts=contexts, latency_ms=_since(start), extra=extra)
        assert self._model is not None
        generating = time.perf_counter()
        try:
            response = await self._model.complete(generate_request(question, retrieval.hits))
            stages["generation"] = _since(generating)
        except ProviderError as exc:
            return Answer(
                text="",
                contexts=contexts,
                latency_ms=_since(start),
                error=describe_exception(exc),
                extra=extra,
            )
        return Answer(
            text=response.text,
            contexts=contexts,
            latency_ms=_since(start),
            tokens=response.usage,
            cost_usd=response.cost_usd,
            unpriced_calls=response.unpriced_calls,
            extra={**extra, "model": self._model.name},
        )

    def _retrieve_and_extract(
        self, index: CorpusIndex, question: str, tags: dict[str, str]
    ) -> tuple[Retrieval, str | None, dict[str, float]]:
        """The retrieval, the extractive answer (``None`` when generating) and the milliseconds of each."""
        start = time.perf_counter()
        vector = self._query_vector(question)
        retrieval = index.retrieve(question, vector, tags, self.cfg.retrieval)
        stages = {"retrieval": _since(start)}
        if self.cfg.answer.mode != "extractive":
            return retrieval, None, stages
        composing = time.perf_counter()
        picked = pick_sentences(index, retrieval.hits, question, vector, self.cfg.answer.max_sentences)
        text = compose_extractive(picked, retrieval.hits)
        stages["generation"] = _since(composing)
        return retrieval, text, stages

    def _query_vector(self, question: str) -> np.ndarray | None:
        if not self._needs_embedder():
            return None
        embedder = self._inner_embedder()
        vector: np.ndarray = encode(embedder, [query_text(embedder.name, question)])[0]
        return vector

    async def aclose(self) -> None:
        """Close the model factory this target opened for generation."""
        if self._factory is not None:
            await self._factory.aclose()


def builtin_target_from_config(
    cfg: BuiltinTargetConfig,
    base_dir: Path,
    name: str,
    source: str,
    *,
    embedder: Embedder | None = None,
    cache_dir: Path | None = None,
    factory: ModelFactory | None = None,
) -> BuiltinTarget:
    """Read the corpus (relative to ``base_dir``) and build the target.

    For ``answer.mode: generate`` the model comes from ``factory``, or from a factory of its own built
    with default settings and the process environment, closed in :meth:`BuiltinTarget.aclose`.
    Raises :class:`~ragreplay.errors.ConfigError` for a bad corpus or model spec.
    """
    corpus = load_corpus(base_dir / cfg.corpus, source)
    model = None
    owned = None
    if cfg.answer.mode == "generate":
        assert cfg.answer.model is not None  # the config validator guarantees it
        if factory is None:
            factory = owned = ModelFactory(ModelSettings())
        model = factory.build(cfg.answer.model)
    return BuiltinTarget(
        cfg, corpus, name=name, embedder=embedder, cache_dir=cache_dir, model=model, factory=owned
    )


def _since(start: float) -> float:
    return (time.perf_counter() - start) * 1000
