"""The ``target:`` section of a ``kind: builtin`` target file: the built-in reference RAG's settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkingConfig(_Strict):
    """Fixed-size word windows; chunks never cross a document."""

    size: int = Field(default=120, ge=5, le=5000, description="Words per chunk.")
    overlap: int = Field(default=30, ge=0, description="Words shared by consecutive chunks.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.overlap >= self.size:
            raise ValueError(
                f"chunking.overlap ({self.overlap}) must be smaller than chunking.size ({self.size}). "
                "Fix: lower the overlap, e.g. to a quarter of the size"
            )
        return self


class RecencyConfig(_Strict):
    """Versions of one ``policy`` family supersede each other by ``effective_date``."""

    enabled: bool = False


class RerankConfig(_Strict):
    """A second stage re-scoring candidates by embedding cosine plus a small token-overlap term."""

    enabled: bool = False
    candidates: int = Field(default=20, ge=1, le=1000)


class RetrievalConfig(_Strict):
    """How chunks are found for a question."""

    mode: Literal["bm25", "dense", "hybrid"] = "bm25"
    top_k: int = Field(default=3, ge=1, le=100)
    candidates: int = Field(default=20, ge=1, le=1000, description="Per retriever, before fusion.")
    embedder: Literal["use", "e5"] = "use"
    rrf_k: int = Field(default=60, ge=1)
    filters: dict[str, str] = Field(
        default_factory=dict,
        description="Metadata filters; a value '{tags.X}' takes the case's tag X (skipped when absent).",
    )
    recency: RecencyConfig = RecencyConfig()
    rerank: RerankConfig = RerankConfig()

    @field_validator("filters", mode="before")
    @classmethod
    def _scalars_as_text(cls, value: Any) -> Any:
        # YAML reads `year: 2024` as a number; metadata values are compared as text.
        if isinstance(value, dict):
            return {
                k: str(v).lower() if isinstance(v, bool) else str(v) if isinstance(v, int | float) else v
                for k, v in value.items()
            }
        return value


class AnswerConfig(_Strict):
    """How the answer is written from the retrieved chunks."""

    mode: Literal["extractive", "generate"] = "extractive"
    max_sentences: int = Field(default=2, ge=1, le=20)
    model: str | None = None

    @model_validator(mode="after")
    def _generate_needs_model(self) -> AnswerConfig:
        if self.mode == "generate" and not (self.model or "").strip():
            raise ValueError(
                "answer.mode is 'generate' but answer.model is not set. "
                "Fix: add 'model: openai:gpt-4.1-mini' (any provider:model) under 'answer:', "
                "or use 'mode: extractive'"
            )
        return self


class BuiltinTargetConfig(_Strict):
    """The built-in reference RAG: a corpus folder or JSONL file, chunking, retrieval and answer settings."""

    kind: Literal["builtin"]
    corpus: str = Field(description="Folder of .md/.txt documents or a .jsonl file, relative to the YAML.")
    chunking: ChunkingConfig = ChunkingConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    answer: AnswerConfig = AnswerConfig()
