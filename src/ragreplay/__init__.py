"""ragreplay: tell whether a new RAG configuration beats production, using the feedback you already have."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = [
    "comparison_dataframe",
    "ingest_log",
    "lexical_metrics",
    "llm_metrics",
    "llm_metrics_async",
    "render_report",
    "retrieval_metrics",
    "run",
    "run_async",
    "run_dataframe",
    "run_gate",
    "summary",
]

# Names the API had before they were renamed: each was hidden by the subpackage of the same name as soon as
# that subpackage was imported, so ``ragreplay.report(...)`` failed with "'module' object is not callable".
_RENAMED = {
    "ingest": "ingest_log",
    "replay": "run",
    "replay_async": "run_async",
    "report": "render_report",
    "gate": "run_gate",
}


def __getattr__(name: str) -> Any:
    # The API is imported lazily so `import ragreplay.core` stays light.
    if name in __all__:
        from ragreplay import api

        return getattr(api, name)
    if name in _RENAMED:
        raise AttributeError(
            f"module 'ragreplay' has no attribute {name!r}: the function is ragreplay.{_RENAMED[name]}() "
            f"(ragreplay.{name} is a subpackage)"
        )
    raise AttributeError(f"module 'ragreplay' has no attribute {name!r}")
