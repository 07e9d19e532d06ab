"""Trace importers: each tool's fixture export becomes the same conversations, roles, order, feedback and chunks.

The four fixtures in tests/fixtures/traces tell one story (an HR and an IT conversation with follow-ups, and a
lone question), each in its tool's own shapes: a categorical score whose index disagrees with its label, a
boolean score, a 1-5 rating read with a threshold, scores that are not user feedback, records out of order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.core.types import Conversation, Feedback, Role, TokenUsage
from ragreplay.errors import InputError
from ragreplay.ingest import FieldMapping, detect_format, iter_conversations

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
GOOD, BAD = Feedback.GOOD, Feedback.BAD
THRESHOLD = FieldMapping(rating_threshold=4)
FIXTURES = {
    "langfuse": ("langfuse.jsonl", "lf-trace-5"),
    "langsmith": ("langsmith.jsonl", "5f0c0000-0000-4000-8000-000000000005"),
    "openinference": ("phoenix.jsonl", "000000000000000000000000000000c1"),
    "otel": ("otel_genai.jsonl", "000000000000000000000000000000c1"),
}
HR = [
    (
        "How many vacation days do I get?",
        "You get 25 vacation days a year.",
        GOOD,
        ["policy-leave#2", "policy-leave#3"],
    ),
    (
        "And can I carry them over?",
        "Up to 5 unused days carry over to the next year.",
        BAD,
        ["policy-leave#7"],
    ),
]
IT = [
    (
        "How do I reset my VPN password?",
        "Open the IT portal and choose Reset VPN password.",
        GOOD,
        ["it-vpn#1"],
    ),
    ("What if I'm locked out?", "Call the helpdesk at extension 1234.", None, ["it-helpdesk#1"]),
    ("Is the helpdesk open on weekends?", "Yes, it is open 24/7.", BAD, ["it-helpdesk#2"]),
]
LONE = [
    (
        "Who approves expense reports?",
        "Your line manager approves them in the finance tool.",
        BAD,
        ["finance-expenses#4"],
    )
]


def read(path: Path, fmt: str | None = None, mapping: FieldMapping = THRESHOLD) -> dict[str, Conversation]:
    return {conv.id: conv for _, conv in iter_conversations(path, fmt, mapping)}


def turns(conv: Conversation) -> list[tuple[str, str, Feedback | None, list[str]]]:
    roles = [m.role for m in conv.messages]
    assert roles == [Role.HUMAN, Role.AI] * (len(roles) // 2)
    pairs = zip(conv.messages[::2], conv.messages[1::2], strict=True)
    for human, _ in pairs:
        assert human.feedback is None and not human.retrieved
    return [
        (human.content, ai.content, ai.feedback, [c.id for c in ai.retrieved])
        for human, ai in zip(conv.messages[::2], conv.messages[1::2], strict=True)
    ]


@pytest.mark.parametrize("fmt", list(FIXTURES))
def test_each_export_maps_to_the_same_conversations(fmt: str) -> None:
    name, lone_id = FIXTURES[fmt]
    path = TRACES / name
    assert detect_format(path) == fmt
    convs = read(path)
    assert list(convs) == sorted(convs, key=list(convs).index)  # file order of first appearance
    assert set(convs) == {"sess-hr-1", "sess-it-7", lone_id}
    assert turns(convs["sess-hr-1"]) == HR  # label thumbs_up wins over index 0; a boolean false is bad
    assert turns(convs["sess-it-7"]) == IT  # interleaved traces put back in time order; 5 and 2 of 5 at >= 4
    assert turns(convs[lone_id]) == LONE  # no session: a conversation of its own trace
    assert [convs[c].user_id for c in ("sess-hr-1", "sess-it-7", lone_id)] == ["u-101", "u-202", "u-303"]
    first_answer = convs["sess-hr-1"].messages[1]
    assert first_answer.latency_ms is not None and 1000 <= first_answer.latency_ms <= 1600
    assert first_answer.tokens is not None and first_answer.tokens.output > 0
    assert first_answer.retrieved[0].score == pytest.approx(0.82)
    assert convs["sess-hr-1"].messages[0].ts is not None


def test_explicit_format_reads_the_same_as_detection() -> None:
    for fmt, (name, _) in FIXTURES.items():
        assert read(TRACES / name, fmt) == read(TRACES / name)


def test_langfuse_tokens_latency_and_tags() -> None:
    convs = read(TRACES / "langfuse.jsonl")
    answer = convs["sess-hr-1"].messages[1]
    assert answer.tokens == TokenUsage(input=812, output=31)
    assert answer.latency_ms == pytest.approx(1420)  # the trace's latency, in seconds
    assert convs["sess-hr-1"].tags == {"production": "true", "department": "hr"}  # nested metadata left out


def test_langfuse_pretty_json_array_keeps_each_items_line(tmp_path: Path) -> None:
    records = [json.loads(line) for line in (TRACES / "langfuse.jsonl").read_text().splitlines()]
    path = write(tmp_path, "export.json", json.dumps(records, indent=2))
    assert read(path) == read(TRACES / "langfuse.jsonl")
    rating = next(r for r in records if r.get("name") == "user_rating")
    rating["dataType"] = "ORDINAL"
    path = write(tmp_path, "bad.json", json.dumps(records, indent=2))
    with pytest.raises(InputError) as info:
        read(path)
    (problem,) = info.value.problems
    lines = path.read_text().splitlines()
    assert problem.line is not None
    assert lines[problem.line - 1].strip() == "{"  # the line the score's object starts on
    assert f'"id": "{rating["id"]}"' in "".join(lines[problem.line : problem.line + 3])
    assert (problem.field, problem.fix) == ("dataType", "use NUMERIC, CATEGORICAL or BOOLEAN")


def test_langfuse_api_page_and_observations_only(tmp_path: Path) -> None:
    gen = {
        "id": "o1", "traceId": "t1", "type": "GENERATION", "startTime": "2026-03-02T09:00:00Z",
        "input": [{"role": "user", "content": "hi?"}], "output": {"role": "assistant", "content": "hello"},
    }  # fmt: skip
    score = {"traceId": "t1", "name": "Feedback", "value": 1, "dataType": "BOOLEAN", "stringValue": "True"}
    path = write(tmp_path, "page.jsonl", jsonl({"data": [gen, score], "meta": {"page": 1, "totalItems": 2}}))
    (conv,) = read(path, "langfuse").values()
    assert turns(conv) == [("hi?", "hello", GOOD, [])]


def test_langsmith_thread_keys_and_project_id() -> None:
    convs = read(TRACES / "langsmith.jsonl")
    # sess-hr-1 is under metadata.session_id, sess-it-7 under thread_id; the run's session_id is its project
    assert "0b5a3f1e-0000-4000-8000-00000000beef" not in convs
    assert convs["sess-it-7"].tags == {
        "prod": "true",
        "department": "it",
    }  # ls_* and thread keys are not tags


def test_langsmith_chat_history_of_a_lone_run(tmp_path: Path) -> None:
    run = {
        "id": "r1", "run_type": "chain", "parent_run_id": None, "start_time": "2026-03-02T09:00:00",
        "inputs": {"input": "and in Dutch?", "chat_history": [
            {"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"}]},
        "outputs": {"output": "Hallo!"},
    }  # fmt: skip
    feedback = {"run_id": "r1", "key": "user_score", "score": 1, "value": None}
    (conv,) = read(write(tmp_path, "runs.jsonl", jsonl(run, feedback)), mapping=FieldMapping()).values()
    assert [(m.role, m.content, m.feedback) for m in conv.messages] == [
        (Role.HUMAN, "Say hi", None),
        (Role.AI, "Hi!", None),
        (Role.HUMAN, "and in Dutch?", None),
        (Role.AI, "Hallo!", GOOD),
    ]


def test_the_later_of_two_votes_wins(tmp_path: Path) -> None:
    run = {"id": "r1", "run_type": "chain", "inputs": {"question": "q?"}, "outputs": {"answer": "a"}}
    later = {"run_id": "r1", "key": "thumbs", "value": "up", "created_at": "2026-03-02T10:00:00Z"}
    earlier = {"run_id": "r1", "key": "thumbs", "value": "down", "created_at": "2026-03-02T09:00:00Z"}
    (conv,) = read(write(tmp_path, "runs.jsonl", jsonl(run, later, earlier))).values()
    assert conv.messages[1].feedback is GOOD


def test_feedback_names_and_synonyms_come_from_the_mapping() -> None:
    mapping = FieldMapping(feedback_names=["QA Correctness"], feedback_synonyms={"correct": Feedback.GOOD})
    convs = read(TRACES / "phoenix.jsonl", mapping=mapping)
    feedback = [m.feedback for c in convs.values() for m in c.messages if m.role is Role.AI]
    assert feedback == [GOOD] * 6  # the LLM evaluator's label now, the users' annotations ignored


def test_otel_history_from_messages_of_a_lone_trace(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "first?"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "one"}]},
        {"role": "user", "parts": [{"type": "text", "content": "second?"}]},
    ]
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(messages)}},
        {"key": "gen_ai.prompt.0.role", "value": {"stringValue": "ignored when input.messages is there"}},
        {"key": "gen_ai.completion.0.role", "value": {"stringValue": "assistant"}},
        {"key": "gen_ai.completion.0.content", "value": {"stringValue": "two"}},
    ]
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat", "attributes": attrs}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    (conv,) = read(write(tmp_path, "otlp.json", json.dumps(doc, indent=1))).values()
    assert [m.content for m in conv.messages] == ["first?", "one", "second?", "two"]


def test_a_line_holding_an_array_of_records(tmp_path: Path) -> None:
    runs = [json.loads(line) for line in (TRACES / "langsmith.jsonl").read_text().splitlines()]
    path = write(tmp_path, "runs.jsonl", json.dumps(runs[:12]) + "\n" + jsonl(*runs[12:]))
    assert detect_format(path) == "langsmith"
    assert read(path) == read(TRACES / "langsmith.jsonl")


def test_a_json_document_of_no_known_tool_is_an_error_naming_the_formats(tmp_path: Path) -> None:
    path = write(tmp_path, "other.json", json.dumps([{"hello": "world"}], indent=2))
    with pytest.raises(InputError) as info:
        detect_format(path)
    assert "cannot tell the log format" in str(info.value) and "--format" in str(info.value)
    assert "langfuse|langsmith|openinference|otel" in str(info.value)
