"""Real Langfuse files (tests/fixtures/real/langfuse, see its README): each one ingested as downloaded.

Fifteen trace downloads of Langfuse's own repository (``{"trace": {...}, "observations": [...]}``, one
framework each) and the ingestion batches the Langfuse Python SDK sent for a chat whose user left thumbs
(produced by scripts/real_fixtures/langfuse_sdk_feedback.py). Every expected value below was read from the
file by hand: short texts are written out; a long one is taken from the file along an explicit JSON path
(``_layers`` undoes Langfuse's JSON-text-inside-JSON-text exactly as many times as the file has it), never
from the code under test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ragreplay.core.extract import extract_cases
from ragreplay.core.types import Conversation, Feedback, Role, SkipReason, TokenUsage
from ragreplay.ingest import detect_format, iter_conversations
from ragreplay.ingest.provenance import observing

REAL = Path(__file__).parent.parent / "fixtures" / "real" / "langfuse"
BATCHES = REAL / "sdk-v2-openai-feedback.batches.jsonl"


def _raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / name).read_text(encoding="utf-8"))
    return data


def _layers(value: Any, times: int) -> Any:
    for _ in range(times):
        value = json.loads(value)
    return value


def _observation(name: str, obs_id: str) -> dict[str, Any]:
    return next(o for o in _raw(name)["observations"] if o["id"] == obs_id)


def _one(path: Path) -> Conversation:
    convs = [conv for _, conv in iter_conversations(path)]
    assert len(convs) == 1
    return convs[0]


def _turn(conv: Conversation) -> tuple[str, str]:
    assert [m.role for m in conv.messages] == [Role.HUMAN, Role.AI]
    return conv.messages[0].content, conv.messages[1].content


def _answer(name: str) -> str:
    """The answer as a person reads it in the trace, along the JSON path each file has it under."""
    trace = _raw(name)["trace"]
    if name.startswith("llamaindex"):
        return str(_layers(trace["output"], 1))
    if name.startswith("langgraph-python"):
        return str(_layers(trace["output"], 2)["messages"][-1]["content"])
    if name.startswith("langgraph-js"):
        return str(_layers(trace["output"], 2)["messages"][-1]["kwargs"]["content"])
    if name.startswith("vertex-ai"):
        return str(_layers(trace["output"], 2)["candidates"][0]["content"]["parts"][0]["text"])
    if name.startswith("agno"):
        return str(_layers(trace["output"], 2)["content"])
    if name.startswith("claude-agent"):
        return str(_layers(trace["output"], 2)["content"][0]["text"])
    if name.startswith(
        "openai-agents"
    ):  # the trace has no output: the last generation's Responses API message
        output = _layers(_observation(name, "90d94774e8e3724d")["output"], 1)
        return str(output["output"][0]["content"][0]["text"])
    if name.startswith("crewai"):  # the trace has no output: the generation's text
        return str(_observation(name, "231c43964b7e7e63")["output"])
    if name.startswith("csharp"):  # the trace's output is an app's dict: the generation's text part
        return str(_layers(_observation(name, "50d470aa18418652")["output"], 1)[0]["parts"][0]["content"])
    raise AssertionError(name)


# file, conversation id, user, question, answer (or None: _answer), latency (ms), tokens (innermost generations)
DOWNLOADS = [
    (
        "llamaindex-2025-06-05.trace.json",
        "session_abc",
        "user_123",
        "What is Langfuse?",
        None,
        2779.0,
        TokenUsage(input=13, output=81),
    ),
    (
        "langgraph-python-2025-08-22.trace.json",
        "e1fde3efec57ce8a69bafd3fb928a7eb",
        None,
        "Search the web for 'example' and summarize.",
        None,
        2610.0,
        TokenUsage(input=60 + 108, output=15 + 51),
    ),
    (
        "langgraph-js-2025-10-30.trace.json",
        "2c1581dd9cecdafb6ca091b83d7ea99a",
        None,
        "What's the weather in San Francisco?",
        "It's always sunny in San Francisco! \n\nWould you like more details (current temperature, hourly "
        "forecast, or a multi-day outlook)?",
        5290.0,
        TokenUsage(input=142 + 179, output=24 + 35),
    ),
    (
        "openai-agents-2025-09-30.trace.json",
        "fee618f96dc31e0ca38b2f7b26eb8b29",
        None,
        "What's the weather in Tokyo?",
        "The weather in Tokyo is currently sunny. If you need more details like temperature or forecast for "
        "the upcoming days, just let me know!",
        2190.0,
        TokenUsage(input=55 + 85, output=15 + 29),
    ),
    (
        "google-adk-2025-08-28.trace.json",
        "demo-session",
        "demo-user",
        "hi",
        "Hello Langfuse 👋!\n",
        1848.0,
        TokenUsage(input=28 + 39, output=3 + 6),
    ),
    (
        "vertex-ai-2025-08-01.trace.json",
        "0298935e31d66d7de9487cac935d7d99",
        None,
        "What is Langfuse?",
        None,
        10722.0,
        TokenUsage(input=5, output=845),
    ),
    (
        "microsoft-agent-2025-12-17.trace.json",
        "8e419d3288419b5d944270505640e183",
        None,
        "What's the weather in Tokyo?",
        "Current conditions in Tokyo, Japan: stormy, high around 23°C.",
        4364.0,
        TokenUsage(input=77 + 216, output=86 + 20),
    ),
    (
        "claude-agent-2025-12-22.trace.json",
        "097f1d8982fa909b8cffb14a166ec272",
        None,
        "What's the weather like in Berlin and New York?",
        None,
        7360.0,
        TokenUsage(input=19 + 5 + 5 + 5, output=29 + 53 + 56 + 94),
    ),
    (
        "crewai-2025-07-11.trace.json",
        "a287bb31e317433610d8827617471140",
        None,
        None,  # the user message of the generation (a CrewAI task prompt): checked below
        None,
        3750.0,
        TokenUsage(input=190, output=164),
    ),
    (
        "agno-2025-06-11.trace.json",
        "35cc6c90-b657-4819-b66c-c931c03ad569",
        None,
        "What is currently trending on Twitter?",
        None,
        6991.0,
        TokenUsage(input=163 + 663, output=20 + 225),  # the OpenAI calls inside Agno's two GENERATIONs
    ),
    (
        "csharp-agent-with-gemini-2026-03-09.trace.json",
        "9714061f-20c0-4d98-9220-1dc7df15c3c2",
        "g.aprozeanu",
        "What are my month over month performance insights the past quarter, by cost, displays, clicks, CTR, "
        "sales, CVR? Please split by campaign taxonomy",
        None,
        14851.0,
        TokenUsage(input=2546 + 3004 + 2497, output=47 + 167 + 200),
    ),
    (
        "pydantic-ai-with-gemini-2025-12-24.trace.json",
        "f68601af42c4a35e1d5e4699de569c1f",
        None,
        'what is 1+1?\nOutput format:\n```json\n{\n    "answer": your answer,\n    "rationale": "explanation '
        'for answer"\n}\n```',
        '{"answer": "2", "rationale": "The operation 1+1 is a basic arithmetic addition. Adding the integer 1 '
        'to itself results in the integer 2."}',
        1820.0,
        TokenUsage(input=40, output=159),
    ),
    (
        "pydantic-ai-tools-2025-12-04.trace.json",
        "7a38edd8123db47ad8dcb8aa4c5e3926",
        None,
        "programming",  # the traced function's one argument, as the trace shows it
        "Why do programmers hate nature?  \nIt has too many bugs!",
        7424.0,
        TokenUsage(input=265 + 417 + 502 + 131, output=73 + 53 + 14 + 69),
    ),
    (
        "koog-2025-08-26.trace.json",
        "dff173a675b759ce1b70e522b27d6846",
        None,
        "Greet and say goodbye to the user in the same message. Use provided tools to generate a proper "
        "greeting. The user name is Bob.",
        "Hello my darling Bob! And, bye my dear Bob!",
        5843.0,
        TokenUsage(input=47 + 168, output=106 + 19),
    ),
]


@pytest.mark.parametrize(
    ("name", "conv_id", "user_id", "question", "answer", "latency_ms", "tokens"),
    DOWNLOADS,
    ids=[row[0].split(".")[0] for row in DOWNLOADS],
)
def test_trace_download_reads_as_a_person_reads_the_trace(
    name: str,
    conv_id: str,
    user_id: str | None,
    question: str | None,
    answer: str | None,
    latency_ms: float,
    tokens: TokenUsage,
) -> None:
    path = REAL / name
    assert detect_format(path) == "langfuse"
    conv = _one(path)
    got_question, got_answer = _turn(conv)
    assert conv.id == conv_id
    assert conv.user_id == user_id
    if question is not None:
        assert got_question == question
    assert got_answer == (answer if answer is not None else _answer(name))
    assert got_answer.strip() and not got_answer.startswith(('"', "{'", '{"messages"'))
    reply = conv.messages[1]
    assert reply.latency_ms == pytest.approx(latency_ms)
    assert reply.tokens == tokens
    assert reply.retrieved == ()
    # every score in these downloads is an LLM judge's (hallucination, toxicity, correctness): no feedback
    assert reply.feedback is None
    assert conv.messages[0].ts == datetime.fromisoformat(_raw(name)["trace"]["timestamp"]).astimezone(UTC)
    assert [s.reason for s in extract_cases(conv)[1]] == [SkipReason.NO_FEEDBACK]


def test_crewai_question_is_the_generations_user_message() -> None:
    name = "crewai-2025-07-11.trace.json"
    generation = _observation(name, "231c43964b7e7e63")
    messages = _layers(generation["input"], 1)["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    question, _ = _turn(_one(REAL / name))
    assert question == messages[1]["content"]
    assert question.startswith("\nCurrent Task: Define the HTML for making a simple website")


def test_vercel_ai_sdk_run_that_ends_in_a_tool_call_is_an_empty_answer() -> None:
    # the trace's output and both generations' are the getWeather tool call: no assistant text at all
    conv = _one(REAL / "vercel-aisdk-2025-11-17.trace.json")
    assert _turn(conv) == ("What is the weather like today in San Francisco?", "")
    assert conv.messages[1].tokens == TokenUsage(input=62, output=85)  # doGenerate inside generateText
    assert conv.messages[1].latency_ms == pytest.approx(3045.0)
    assert [s.reason for s in extract_cases(conv)[1]] == [SkipReason.EMPTY_ANSWER]


def test_llamaindex_trace_metadata_json_text_and_tags_become_conversation_tags() -> None:
    conv = _one(REAL / "llamaindex-2025-06-05.trace.json")
    assert conv.tags["llama-index"] == "true"
    assert conv.tags["rag"] == "true"
    assert conv.tags["email"] == "user@langfuse.com"


def test_downloads_as_an_array_and_as_json_lines_read_the_same(tmp_path: Path) -> None:
    names = ["llamaindex-2025-06-05.trace.json", "openai-agents-2025-09-30.trace.json"]
    downloads = [_raw(name) for name in names]
    array = tmp_path / "traces.json"
    array.write_text(json.dumps(downloads, indent=2), encoding="utf-8")
    lines = tmp_path / "traces.jsonl"
    lines.write_text("".join(json.dumps(d) + "\n" for d in downloads), encoding="utf-8")
    one_by_one = {c.id: c for name in names for _, c in iter_conversations(REAL / name)}
    for path in (array, lines):
        assert detect_format(path) == "langfuse"
        assert {c.id: c for _, c in iter_conversations(path)} == one_by_one


def test_eval_scores_and_repeated_observations_are_counted_as_left_out() -> None:
    with observing() as seen:
        _one(REAL / "microsoft-agent-2025-12-17.trace.json")
    raw = _raw("microsoft-agent-2025-12-17.trace.json")
    count = len(raw["observations"])
    assert len(raw["trace"]["observations"]) == count  # the download lists each observation twice
    assert seen.read["trace"] == 1
    assert sum(n for kind, n in seen.read.items() if kind.startswith("observation ")) == count
    assert seen.ignored["observation listed twice (the trace's and the download's list): read once"] == count
    for score in ("correctness", "hallucination", "toxicity"):
        assert seen.ignored[f"score {score!r}: not a feedback name"] == 1


def test_origins_name_the_generation_when_the_trace_has_no_text() -> None:
    with observing() as seen:
        _one(REAL / "openai-agents-2025-09-30.trace.json")
    (origin,) = seen.origins["fee618f96dc31e0ca38b2f7b26eb8b29"]
    assert origin["question"].startswith("observation GENERATION")
    assert origin["question"].endswith(" input")
    assert origin["answer"].startswith("observation GENERATION")
    assert origin["answer"].endswith(" output")


# --- the SDK's ingestion batches, with the user's feedback --------------------------------------------------

SESSION = [
    (
        "How many vacation days do I get?",
        "Full-time employees get 25 vacation days a year.",
        ["hr-handbook#leave-1", "hr-handbook#leave-2"],
        TokenUsage(input=52, output=8),
        Feedback.GOOD,  # user_feedback 1.0
    ),
    (
        "Can I carry unused days over?",
        "Yes, up to 5 unused days carry over to the next year.",
        ["hr-handbook#carry-over-1", "hr-handbook#carry-over-2"],
        TokenUsage(input=52, output=12),
        Feedback.BAD,  # user_feedback 0.0 (and an LLM judge's hallucination 0.9, not feedback)
    ),
    (
        "Who approves my leave?",
        "Your line manager approves leave requests in the HR portal.",
        ["hr-handbook#leave-1", "hr-handbook#leave-2"],
        TokenUsage(input=52, output=10),
        None,
    ),
]


def test_sdk_ingestion_batches_give_the_session_with_its_user_feedback() -> None:
    assert detect_format(BATCHES) == "langfuse"
    conv = _one(BATCHES)
    assert conv.id == "hr-session-7"
    assert conv.user_id == "u-1042"
    assert conv.tags == {"hr": "true"}
    pairs = list(zip(conv.messages[::2], conv.messages[1::2], strict=True))
    assert len(pairs) == len(SESSION)
    for (human, ai), (question, answer, chunks, tokens, feedback) in zip(pairs, SESSION, strict=True):
        assert (human.role, ai.role) == (Role.HUMAN, Role.AI)
        assert human.content == question
        assert ai.content == answer
        assert [c.id for c in ai.retrieved] == chunks
        assert [c.score for c in ai.retrieved] == [0.82, 0.64]
        assert ai.tokens == tokens
        assert ai.feedback == feedback
    cases, skips = extract_cases(conv)
    assert [(c.query, c.feedback) for c in cases] == [
        ("How many vacation days do I get?", Feedback.GOOD),
        ("Can I carry unused days over?", Feedback.BAD),
    ]
    assert [s.reason for s in skips] == [SkipReason.NO_FEEDBACK]


def test_sdk_batches_keep_the_first_timestamp_and_time_the_turn_by_its_observations() -> None:
    first = json.loads(BATCHES.read_text(encoding="utf-8").splitlines()[0])["batch"]
    creates = [e["body"] for e in first if e["type"] == "trace-create" and "timestamp" in e["body"]]
    started = creates[0]["timestamp"]  # later trace-create events of the same trace resend a timestamp
    conv = _one(BATCHES)
    assert conv.messages[0].ts == datetime.fromisoformat(started)
    span = next(e["body"] for e in first if e["type"] == "span-create")
    generation_end = next(e["body"]["endTime"] for e in first if e["type"] == "generation-update")
    expected = datetime.fromisoformat(generation_end) - datetime.fromisoformat(span["startTime"])
    assert conv.messages[1].latency_ms == pytest.approx(expected.total_seconds() * 1000)


# --- the blob-storage export: one JSONL per table, snake_case columns ---------------------------------------
# No real blob export is public; these rows are the llamaindex download's records written with the columns the
# export selects (langfuse/langfuse worker: getTracesForBlobStorageExport, LEGACY_OBSERVATION_EXPORT_FIELDS,
# getScoresForBlobStorageExport), ClickHouse's JSON text for DateTime64 and quoted 64-bit integers.


def _clickhouse_time(iso: str | None) -> str | None:
    return None if iso is None else iso.replace("T", " ").removesuffix("Z")


def _blob_tables() -> dict[str, list[dict[str, Any]]]:
    raw = _raw("llamaindex-2025-06-05.trace.json")
    trace = raw["trace"]
    traces = [
        {
            "id": trace["id"],
            "timestamp": _clickhouse_time(trace["timestamp"]),
            "name": trace["name"],
            "environment": trace["environment"],
            "project_id": trace["projectId"],
            "metadata": {},
            "user_id": trace["userId"],
            "session_id": trace["sessionId"],
            "release": None,
            "version": trace["version"],
            "public": True,
            "bookmarked": False,
            "tags": trace["tags"],
            "input": trace["input"],
            "output": trace["output"],
            "created_at": _clickhouse_time(trace["createdAt"]),
            "updated_at": _clickhouse_time(trace["updatedAt"]),
        }
    ]
    observations = [
        {
            "id": o["id"],
            "trace_id": o["traceId"],
            "project_id": o["projectId"],
            "type": o["type"],
            "parent_observation_id": o["parentObservationId"],
            "start_time": _clickhouse_time(o["startTime"]),
            "end_time": _clickhouse_time(o["endTime"]),
            "name": o["name"],
            "input": o["input"],
            "output": o["output"],
            "usage_details": {k: str(v) for k, v in o["usageDetails"].items()},
        }
        for o in raw["observations"]
    ]
    scores = [
        {
            "id": "score-1",
            "timestamp": "2025-06-05 15:46:10.000",
            "project_id": trace["projectId"],
            "trace_id": trace["id"],
            "observation_id": None,
            "session_id": None,
            "name": "user_feedback",
            "value": 0,
            "source": "API",
            "data_type": "NUMERIC",
            "string_value": None,
        }
    ]
    return {"observations": observations, "scores": scores, "traces": traces}


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_blob_export_tables_read_concatenated_in_any_order_or_as_a_folder(tmp_path: Path) -> None:
    tables = _blob_tables()
    folder = tmp_path / "export"
    folder.mkdir()
    for table, rows in tables.items():
        (folder / f"{table}.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    one = tmp_path / "one.jsonl"
    one.write_text("".join(_jsonl(tables[t]) for t in ("scores", "observations", "traces")), encoding="utf-8")
    for path in (one, folder):
        assert detect_format(path) == "langfuse"
        conv = _one(path)
        assert conv.id == "session_abc"
        assert conv.user_id == "user_123"
        question, answer = _turn(conv)
        assert question == "What is Langfuse?"
        assert answer == _answer("llamaindex-2025-06-05.trace.json")
        assert conv.messages[1].tokens == TokenUsage(input=13, output=81)
        # no latency column in the traces table: first observation start to last end
        assert conv.messages[1].latency_ms == pytest.approx(2779.0)
        assert conv.messages[1].feedback is Feedback.BAD
