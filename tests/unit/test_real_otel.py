"""OpenTelemetry GenAI importer on files produced by the instrumentations themselves (tests/fixtures/real/otel).

Each file is what the OpenTelemetry SDK's OTLP/HTTP exporter sent for an OpenAI-SDK app instrumented by
opentelemetry-instrumentation-openai-v2 (three content modes) or Traceloop's OpenLLMetry (two versions), with the
users' feedback emitted as ``gen_ai.evaluation.result`` log records (see the folder's README.md and
scripts/real_fixtures/otel_genai_openai.py). The expected values below were read from the files by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from files import write
from ragreplay.core.types import Conversation, Feedback, Role, TokenUsage
from ragreplay.errors import InputError
from ragreplay.ingest import FieldMapping, detect_format, iter_conversations
from ragreplay.ingest.provenance import observing

REAL = Path(__file__).parent.parent / "fixtures" / "real" / "otel"
GOOD, BAD = Feedback.GOOD, Feedback.BAD
Q1, Q2, Q3 = (
    "How many vacation days do I get per year?",
    "Can I carry unused days over to next year?",
    "Who approves my expense reports?",
)
A1, A2, A3 = (
    "Full-time employees get 25 vacation days a year.",
    "Yes, up to 5 unused days carry over; the rest expire on 31 March.",
    "Your line manager approves expense reports in the finance tool.",
)
TOKENS = [TokenUsage(input=112, output=12), TokenUsage(input=151, output=18), TokenUsage(input=98, output=13)]
CHUNKS = [["handbook/leave.md#2", "handbook/leave.md#3"], ["handbook/leave.md#7"], ["handbook/expenses.md#1"]]
#: file -> (the lone question's trace id, root span latencies in ms, chunks recorded?)
FILES = {
    "openai_v2_log_events.jsonl": (
        "4c6fdce06586d47e0333d2e4577586ce",
        [69.281564, 56.540515, 55.796606],
        False,
    ),
    "openai_v2_span_attributes_base64.jsonl": (
        "660eaedc1f5abc7a2cdad590cfe65915",  # base64 "Zg6u3B9avHos2tWQz+ZZFQ==" in the file
        [64.615534, 55.356116, 55.21383],
        True,
    ),
    "openai_v2_inference_details_logs.jsonl": (
        "87fa6070ffc8345f748d101f70483f6b",
        [65.614548, 54.692335, 56.763386],
        False,
    ),
    "openllmetry_0.62.4.jsonl": (
        "b5b7075dda96bc71105397c8937a2bdd",
        [71.095109, 56.776451, 55.239397],
        False,
    ),
    "openllmetry_0.47.5.jsonl": (
        "5137047765fbeee83d01a037913bc4bd",
        [65.907968, 54.988144, 55.751779],
        False,
    ),
}


def read(path: Path, mapping: FieldMapping | None = None) -> dict[str, Conversation]:
    mapping = mapping or FieldMapping(rating_threshold=4)
    return {conv.id: conv for _, conv in iter_conversations(path, None, mapping)}


@pytest.mark.parametrize("name", list(FILES))
def test_each_produced_file_reads_field_by_field(name: str) -> None:
    lone, latencies, has_chunks = FILES[name]
    path = REAL / name
    assert detect_format(path) == "otel"
    convs = read(path)
    assert list(convs) == ["conv-hr-7f3a", lone]  # gen_ai.conversation.id / session.id, else the trace id
    hr, alone = convs["conv-hr-7f3a"], convs[lone]
    assert [m.role for m in hr.messages] == [Role.HUMAN, Role.AI] * 2  # the system prompt is not history
    assert [m.content for m in hr.messages] == [Q1, A1, Q2, A2]
    assert [m.content for m in alone.messages] == [Q3, A3]
    answers = [hr.messages[1], hr.messages[3], alone.messages[1]]
    assert [a.feedback for a in answers] == [GOOD, BAD, None]  # the judge's "relevance" result is no vote
    assert [a.tokens for a in answers] == TOKENS
    assert [a.latency_ms for a in answers] == pytest.approx(
        latencies, abs=0.002
    )  # times kept to the microsecond
    assert [[c.id for c in a.retrieved] for a in answers] == (CHUNKS if has_chunks else [[], [], []])
    assert hr.user_id == alone.user_id == "u-4821"
    assert all(m.ts is not None for m in hr.messages if m.role is Role.HUMAN)


def test_retrieval_scores_from_the_retrieval_span() -> None:
    convs = read(REAL / "openai_v2_span_attributes_base64.jsonl")
    assert [c.score for c in convs["conv-hr-7f3a"].messages[1].retrieved] == [0.9, 0.8]


def test_log_records_before_their_spans_join_them(tmp_path: Path) -> None:
    lines = (REAL / "openai_v2_log_events.jsonl").read_text().splitlines(keepends=True)
    assert [json.loads(line).keys() for line in lines] == [
        {"resourceSpans"},
        {"resourceLogs"},
        {"resourceLogs"},
    ]
    moved = write(tmp_path, "logs_first.jsonl", "".join(lines[1:] + lines[:1]))
    assert read(moved) == read(REAL / "openai_v2_log_events.jsonl")


def test_ratings_need_the_threshold_and_the_mapping_names_the_feedback() -> None:
    path = REAL / "openllmetry_0.47.5.jsonl"  # user_rating 5 and 2, no label
    convs = read(path, FieldMapping(rating_threshold=5))
    assert [m.feedback for m in convs["conv-hr-7f3a"].messages if m.role is Role.AI] == [GOOD, BAD]
    judged = read(path, FieldMapping(feedback_names=["relevance"], feedback_synonyms={"relevant": GOOD}))
    assert [m.feedback for m in judged["conv-hr-7f3a"].messages if m.role is Role.AI] == [None, GOOD]


def test_dry_run_provenance_names_the_log_records() -> None:
    with observing() as seen:
        read(REAL / "openai_v2_log_events.jsonl")
    assert seen.read["log record gen_ai.user.message"] == 4  # turn 2 resends turn 1's question
    assert seen.read["log record gen_ai.choice"] == 3
    assert seen.read["evaluation (feedback)"] == 2
    assert seen.ignored == {"evaluation 'relevance': not a feedback name": 1}
    first = seen.origins["conv-hr-7f3a"][0]
    assert first["question"].startswith(
        "events gen_ai.system.message, gen_ai.user.message (line 2 resourceLogs"
    )
    assert first["answer"].startswith("events gen_ai.choice (line 2 resourceLogs")
    assert first["feedback"].endswith("attributes[gen_ai.evaluation.score.label]")


def test_dry_run_provenance_of_the_attribute_forms() -> None:
    with observing() as seen:
        read(REAL / "openai_v2_inference_details_logs.jsonl")
    first = seen.origins["conv-hr-7f3a"][0]
    assert (
        first["question"]
        == "log record gen_ai.client.inference.operation.details (line 2) gen_ai.input.messages"
    )
    with observing() as seen:
        read(REAL / "openllmetry_0.47.5.jsonl")
    first = seen.origins["conv-hr-7f3a"][0]
    assert first["question"] == "span 'openai.chat' (line 1) gen_ai.prompt.N.content"
    assert first["answer"] == "span 'openai.chat' (line 1) gen_ai.completion.N.content"


def test_an_evaluation_on_a_trace_not_in_the_file_is_a_problem(tmp_path: Path) -> None:
    lines = (REAL / "openai_v2_inference_details_logs.jsonl").read_text().splitlines(keepends=True)
    path = write(tmp_path, "feedback_only.jsonl", lines[2])
    with pytest.raises(InputError) as info:
        read(path)
    assert "evaluation event on '" in str(info.value) and "not in this file" in str(info.value)


def test_logs_in_their_own_file_join_their_spans_in_a_folder(tmp_path: Path) -> None:
    lines = (REAL / "openai_v2_log_events.jsonl").read_text().splitlines(keepends=True)
    folder = tmp_path / "export"
    folder.mkdir()
    write(folder, "logs.jsonl", "".join(lines[1:]))  # the collector's logs pipeline, a file of its own
    write(folder, "traces.jsonl", lines[0])
    assert read(folder) == read(REAL / "openai_v2_log_events.jsonl")
