"""ragreplay: tell whether a new RAG configuration beats production, using the feedback you already have."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["gate", "ingest", "replay", "replay_async", "report", "summary"]


def __getattr__(name: str) -> Any:
    # The API is imported lazily so `import ragreplay.core` stays light.
    if name in __all__:
        from ragreplay import api

        return getattr(api, name)
    raise AttributeError(f"module 'ragreplay' has no attribute {name!r}")
