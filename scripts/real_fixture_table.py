"""The table of docs/importers.md's "Real files" section: every input under tests/fixtures/real, read by its
importer, with what it yields (turns, cases by feedback, skips by reason).

    python scripts/real_fixture_table.py            # print the table (markdown)

`tests/unit/test_real_fixture_table.py` checks that docs/importers.md holds exactly this table, so the figures
there are measured, not typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragreplay.ingest import FieldMapping, validate_file

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"

#: format folder -> (the --format it is read as, where its files come from)
FORMATS = {
    "langfuse": ("langfuse", "Langfuse"),
    "langsmith": ("langsmith", "LangSmith"),
    "phoenix": ("openinference", "Phoenix / OpenInference"),
    "otel": ("otel", "OpenTelemetry GenAI"),
}
#: input (file or folder, relative to its format folder) -> (framework, origin: "repository" or "produced")
INPUTS: dict[str, tuple[str, str]] = {
    "langfuse/agno-2025-06-11.trace.json": ("Agno", "repository"),
    "langfuse/claude-agent-2025-12-22.trace.json": ("Claude Agent SDK", "repository"),
    "langfuse/crewai-2025-07-11.trace.json": ("CrewAI", "repository"),
    "langfuse/csharp-agent-with-gemini-2026-03-09.trace.json": ("Microsoft.Extensions.AI (C#)", "repository"),
    "langfuse/google-adk-2025-08-28.trace.json": ("Google ADK", "repository"),
    "langfuse/koog-2025-08-26.trace.json": ("Koog (Kotlin)", "repository"),
    "langfuse/langgraph-js-2025-10-30.trace.json": ("LangGraph (JS)", "repository"),
    "langfuse/langgraph-python-2025-08-22.trace.json": ("LangGraph (Python)", "repository"),
    "langfuse/llamaindex-2025-06-05.trace.json": ("LlamaIndex", "repository"),
    "langfuse/microsoft-agent-2025-12-17.trace.json": ("Microsoft Agent Framework", "repository"),
    "langfuse/openai-agents-2025-09-30.trace.json": ("OpenAI Agents SDK", "repository"),
    "langfuse/pydantic-ai-tools-2025-12-04.trace.json": ("Pydantic AI (tools)", "repository"),
    "langfuse/pydantic-ai-with-gemini-2025-12-24.trace.json": ("Pydantic AI (Gemini)", "repository"),
    "langfuse/sdk-v2-openai-feedback.batches.jsonl": ("Langfuse SDK + OpenAI SDK", "produced"),
    "langfuse/vercel-aisdk-2025-11-17.trace.json": ("Vercel AI SDK", "repository"),
    "langfuse/vertex-ai-2025-08-01.trace.json": ("Vertex AI (Gemini)", "repository"),
    "langsmith/bulk_export_langgraph.parquet": ("LangGraph (bulk export, Parquet)", "produced"),
    "langsmith/langchain_chat_select.jsonl": ("LangChain chat model", "produced"),
    "langsmith/langchain_rag_trees.json": ("LangChain RAG (run trees)", "produced"),
    "langsmith/langgraph_agent_runs_feedback.jsonl": ("LangGraph agent", "produced"),
    "langsmith/openai_sdk_wrap_runs_feedback.jsonl": ("OpenAI SDK (wrap_openai)", "produced"),
    "phoenix/langchain_rag": ("LangChain RAG (spans + annotations)", "produced"),
    "phoenix/llama_index_rag": ("LlamaIndex (Parquet + annotations)", "produced"),
    "phoenix/llama_index_rag.spans.csv": ("LlamaIndex (spans CSV)", "produced"),
    "phoenix/openai_agents.spans_page.json": ("OpenAI Agents SDK (REST page)", "produced"),
    "phoenix/openai_sdk_session.otlp.jsonl": ("OpenAI SDK (OTLP JSON)", "produced"),
    "otel/openai_v2_inference_details_logs.jsonl": ("OpenAI SDK, openai-v2 (details logs)", "produced"),
    "otel/openai_v2_log_events.jsonl": ("OpenAI SDK, openai-v2 (events)", "produced"),
    "otel/openai_v2_span_attributes_base64.jsonl": ("OpenAI SDK, openai-v2 (attributes)", "produced"),
    "otel/openllmetry_0.47.5.jsonl": ("OpenAI SDK, OpenLLMetry 0.47", "produced"),
    "otel/openllmetry_0.62.4.jsonl": ("OpenAI SDK, OpenLLMetry 0.62", "produced"),
}

#: inputs whose users rated 1-5: read with ``rating_threshold: 4`` (as their tests do); the table says so
RATED = {"otel/openllmetry_0.47.5.jsonl", "otel/openllmetry_0.62.4.jsonl"}


@dataclass(frozen=True)
class FixtureRow:
    """What one input yields."""

    tool: str
    name: str
    framework: str
    origin: str
    conversations: int
    turns: int
    good: int
    bad: int
    skips: str


def inputs() -> list[Path]:
    """Every input under :data:`REAL`: each file of a format folder, and each subfolder as one export."""
    found: list[Path] = []
    for folder in sorted(REAL.iterdir()):
        if folder.is_dir():
            found += [p for p in sorted(folder.iterdir()) if p.name != "README.md"]
    return found


def read(path: Path) -> FixtureRow:
    """Read one input with its folder's importer."""
    relative = path.relative_to(REAL).as_posix()
    fmt, tool = FORMATS[path.parent.name]
    framework, origin = INPUTS[relative]
    rated = relative in RATED
    summary = validate_file(path, fmt, FieldMapping(rating_threshold=4) if rated else None)
    turns = summary.cases + sum(
        n for reason, n in summary.skips_by_reason.items() if reason != "system_or_tool"
    )
    skips = ", ".join(f"{reason} {n}" for reason, n in summary.skips_by_reason.items()) or "-"
    return FixtureRow(
        tool=tool,
        name=relative.split("/", 1)[1] + ("/" if path.is_dir() else ""),
        framework=framework + (" (1-5 rating, `rating_threshold: 4`)" if rated else ""),
        origin=origin,
        conversations=summary.conversations,
        turns=turns,
        good=summary.cases_by_feedback.get("good", 0),
        bad=summary.cases_by_feedback.get("bad", 0),
        skips=skips,
    )


def markdown(rows: list[FixtureRow]) -> str:
    """The rows as the docs' table."""
    lines = [
        "| tool | input | framework | from | conversations | answers read | good | bad | skipped (reason) |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.tool} | `{r.name}` | {r.framework} | {r.origin} | {r.conversations} | {r.turns} | {r.good} "
            f"| {r.bad} | {r.skips} |"
        )
    return "\n".join(lines)


def table() -> str:
    """The whole table, measured now."""
    return markdown([read(path) for path in inputs()])


if __name__ == "__main__":
    print(table())
