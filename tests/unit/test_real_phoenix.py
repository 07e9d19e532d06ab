"""Real Phoenix / OpenInference exports (tests/fixtures/real/phoenix/, see its README) read field by field.

Every expected value was read from the fixture files by hand (ids, texts, times, token counts, annotations),
not computed by the importer. The files were produced by the OpenInference instrumentations of the OpenAI SDK,
LangChain, LlamaIndex and the OpenAI Agents SDK against a loopback Phoenix server, and exported with Phoenix's
own client and REST API (scripts/real_fixtures/phoenix_openinference.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragreplay.core.types import Conversation, Feedback, Message, Role, TokenUsage
from ragreplay.ingest import detect_format, iter_conversations
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.provenance import observing

REAL = Path(__file__).parents[1] / "fixtures" / "real" / "phoenix"
GOOD, BAD = Feedback.GOOD, Feedback.BAD


def _read(path: Path, mapping: FieldMapping | None = None) -> list[Conversation]:
    assert detect_format(path) == "openinference"
    return [conv for _, conv in iter_conversations(path, None, mapping)]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _ms(start: str, end: str) -> float:
    return (_at(end) - _at(start)).total_seconds() * 1000


def _turns(conv: Conversation) -> list[tuple[Message, Message]]:
    assert [m.role for m in conv.messages] == [Role.HUMAN, Role.AI] * (len(conv.messages) // 2)
    return list(zip(conv.messages[::2], conv.messages[1::2], strict=True))


def test_openai_sdk_session_as_otlp_json() -> None:
    """OTLP JSON (collector file exporter form, hex ids): two ChatCompletion spans of session support-7."""
    (conv,) = _read(REAL / "openai_sdk_session.otlp.jsonl")
    assert (conv.id, conv.user_id, conv.tags) == ("support-7", "u-ann", {})
    (q1, a1), (q2, a2) = _turns(conv)
    assert q1.content == "How do I reset my password?"
    assert a1.content == "Open Settings > Security and choose Reset password."
    assert q2.content == "And if I no longer have access to my email?"
    assert a2.content == "Contact support with your account ID; they verify you by phone."
    assert q1.ts == datetime.fromtimestamp(1796691901.325560591, tz=UTC)
    assert a1.latency_ms == pytest.approx((1796691901343578533 - 1796691901325560591) / 1e6, abs=1e-3)
    assert a2.latency_ms == pytest.approx((1796691901371516309 - 1796691901367769444) / 1e6, abs=1e-3)
    assert (a1.tokens, a2.tokens) == (TokenUsage(input=14, output=8), TokenUsage(input=32, output=11))
    assert a1.retrieved == a2.retrieved == ()
    assert a1.feedback is None and a2.feedback is None  # OTLP carries no annotations


def test_langchain_rag_spans_with_annotations_folder() -> None:
    """get_spans() JSON with get_span_annotations() beside it: the users' thumbs on the root and on the
    ChatOpenAI span; the LLM judge's correctness left out."""
    (conv,) = _read(REAL / "langchain_rag")
    assert (conv.id, conv.user_id) == ("lc-session-42", "u-bob")
    (q1, a1), (q2, a2) = _turns(conv)
    assert (q1.content, a1.content) == (
        "What is the refund window?",
        "You can ask for a refund within 30 days of purchase.",
    )
    assert (q2.content, a2.content) == (
        "Do refunds cover shipping costs?",
        "No, shipping costs are not refunded unless the item arrived damaged.",
    )
    assert q1.ts == _at("2026-12-08T01:05:10.338459+00:00")
    assert a1.latency_ms == pytest.approx(
        _ms("2026-12-08T01:05:10.338459+00:00", "2026-12-08T01:05:10.389192+00:00")
    )
    assert a2.latency_ms == pytest.approx(
        _ms("2026-12-08T01:05:10.393829+00:00", "2026-12-08T01:05:10.497487+00:00")
    )
    assert a1.tokens == a2.tokens == TokenUsage(input=28, output=11)
    # LangChain's retriever span has no document.id: the ids its output.value documents carry
    for answer in (a1, a2):
        assert [(c.id, c.score) for c in answer.retrieved] == [
            ("refund-policy#1", None),
            ("refund-policy#2", None),
        ]
        assert [c.text for c in answer.retrieved] == [
            "Refunds are accepted within 30 days of purchase.",
            "Shipping costs are refunded only when the item arrived damaged.",
        ]
    assert (a1.feedback, a2.feedback) == (GOOD, BAD)  # thumbs-up on the root, thumbs-down on the LLM span


def test_langchain_rag_judge_read_when_the_mapping_names_it() -> None:
    mapping = FieldMapping(
        feedback_names=["correctness"], feedback_synonyms={"correct": GOOD, "incorrect": BAD}
    )
    (conv,) = _read(REAL / "langchain_rag", mapping)
    assert [m.feedback for m in conv.messages if m.role is Role.AI] == [GOOD, BAD]


def test_langchain_rag_spans_alone_have_no_feedback() -> None:
    (conv,) = _read(REAL / "langchain_rag" / "spans.json")
    assert [m.feedback for m in conv.messages if m.role is Role.AI] == [None, None]
    assert [m.content for m in conv.messages if m.role is Role.HUMAN] == [
        "What is the refund window?",
        "Do refunds cover shipping costs?",
    ]


LLAMA_CHUNKS = [
    (
        "3713f9d7-03bb-4b72-bfa4-98b3ef99158b",
        1.0,
        "Priority support is part of the Business and Enterprise plans.",
    ),
    ("792a6d7c-c1e1-4b90-97b0-e45b3a252465", 1.0, "Priority support answers within 4 business hours."),
]


def _check_llama_index(conv: Conversation) -> tuple[Message, Message]:
    """The two queries of li-session-9; the indexing traces (SentenceSplitter, embeddings) are no turns."""
    assert (conv.id, conv.user_id) == ("li-session-9", "u-cem")
    (q1, a1), (q2, a2) = _turns(conv)
    assert (q1.content, a1.content) == (
        "Which plans include priority support?",
        "Priority support is included in the Business and Enterprise plans.",
    )
    assert (q2.content, a2.content) == (
        "How fast does priority support reply?",
        "Priority support replies within 4 business hours.",
    )
    assert q1.ts == _at("2026-12-08 01:05:14.631464+00:00")
    assert a1.latency_ms == pytest.approx(
        _ms("2026-12-08 01:05:14.631464+00:00", "2026-12-08 01:05:14.915148+00:00")
    )
    assert a2.latency_ms == pytest.approx(
        _ms("2026-12-08 01:05:14.921985+00:00", "2026-12-08 01:05:15.067863+00:00")
    )
    # token counts are floats in the dataframe (100.0); only OpenAI.chat has them, not OpenAI.predict
    assert (a1.tokens, a2.tokens) == (TokenUsage(input=99, output=10), TokenUsage(input=100, output=7))
    for answer in (a1, a2):  # two nested retriever spans, the chunks once
        assert [(c.id, c.score, c.text) for c in answer.retrieved] == LLAMA_CHUNKS
    return a1, a2


def test_llama_index_spans_dataframe_parquet_with_annotations_folder() -> None:
    """get_spans_dataframe().to_parquet, get_span_annotations_dataframe().to_csv, and the REST page of trace
    annotations: a span user_feedback "positive", a trace user_feedback "negative", an LLM relevance left out."""
    (conv,) = _read(REAL / "llama_index_rag")
    a1, a2 = _check_llama_index(conv)
    assert (a1.feedback, a2.feedback) == (GOOD, BAD)


def test_llama_index_spans_dataframe_csv() -> None:
    """to_csv writes lists as Python literals and token counts as 100.0: read as the Parquet file."""
    (conv,) = _read(REAL / "llama_index_rag.spans.csv")
    a1, a2 = _check_llama_index(conv)
    assert (a1.feedback, a2.feedback) == (None, None)


def test_openai_agents_rest_page_of_spans() -> None:
    """The REST page {"data": [...], "next_cursor": null}: the agent root has no input/output, the Responses
    API LLM span gives the question and the answer."""
    (conv,) = _read(REAL / "openai_agents.spans_page.json")
    assert (conv.id, conv.user_id) == ("agents-session-3", "u-dee")
    ((q, a),) = _turns(conv)
    assert q.content == "Can I change my plan mid-cycle?"
    assert a.content == "Yes, plan changes apply at once and are prorated."
    assert q.ts == _at("2026-12-08T01:05:17.907974+00:00")
    assert a.latency_ms == pytest.approx(
        _ms("2026-12-08T01:05:17.907974+00:00", "2026-12-08T01:05:18.150339+00:00")
    )
    assert a.tokens == TokenUsage(input=17, output=9)
    assert (a.retrieved, a.feedback) == ((), None)


def test_provenance_names_the_span_and_annotation_each_value_came_from() -> None:
    with observing() as seen:
        _read(REAL / "langchain_rag")
    (turns,) = seen.origins.values()
    root = "span 'RunnableSequence' (spans.json:226)"
    assert turns[0]["question"] == f"{root} input.value"
    assert turns[0]["answer"] == f"{root} output.value"
    assert turns[0]["latency_ms"] == f"{root} start_time..end_time"
    assert turns[0]["retrieved"] == "span 'PolicyRetriever' (spans.json:423) retrieval.documents"
    assert turns[0]["feedback"] == "annotation at annotations.json:53, field result.label"
    assert seen.ignored == {"annotation 'correctness': not a feedback name": 2}
    assert seen.read["annotation HUMAN"] == 2
    assert seen.read["span LLM"] == 2


def test_provenance_counts_the_indexing_traces_left_out() -> None:
    with observing() as seen:
        _read(REAL / "llama_index_rag")
    assert seen.ignored == {
        "annotation 'relevance': not a feedback name": 1,
        "trace of span 'MockEmbedding.get_text_embedding_batch': no question, answer or model call": 1,
        "trace of span 'SentenceSplitter.__call__': no question, answer or model call": 1,
    }
    (turns,) = seen.origins.values()
    assert turns[1]["feedback"] == "annotation at trace_annotations.json:1, field result.label"


# The shapes the real exports showed, in their smallest form.

_SPAN = {
    "name": "agent",
    "context": {"trace_id": "t1", "span_id": "s1"},
    "span_kind": "AGENT",
    "parent_id": None,
    "attributes": {"session.id": "c1"},
}
_LLM = {
    "name": "response",
    "context": {"trace_id": "t1", "span_id": "s2"},
    "span_kind": "LLM",
    "parent_id": "s1",
    "attributes": {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Which plan?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "Business.",
    },
}


def _write(tmp_path: Path, *records: dict[str, object]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _answers(path: Path, mapping: FieldMapping | None = None) -> list[tuple[str, Feedback | None]]:
    return [(m.content, m.feedback) for c in _read(path, mapping) for m in c.messages if m.role is Role.AI]


def test_an_answer_in_message_contents_only(tmp_path: Path) -> None:
    assert _answers(_write(tmp_path, _SPAN, _LLM)) == [("Business.", None)]


def test_an_llm_annotation_with_a_feedback_name_counts_only_when_the_mapping_names_it(tmp_path: Path) -> None:
    judge = {
        "span_id": "s2",
        "name": "user_feedback",
        "annotator_kind": "LLM",
        "result": {"label": "negative"},
    }
    path = _write(tmp_path, _SPAN, _LLM, judge)
    assert _answers(path) == [("Business.", None)]
    assert _answers(path, FieldMapping(feedback_names=["user_feedback"])) == [("Business.", BAD)]


def test_annotation_dataframe_rows_and_trace_annotations(tmp_path: Path) -> None:
    row = {
        "span_id": "s2",
        "annotation_name": "user feedback",
        "annotator_kind": "HUMAN",
        "result.label": "👍",
    }
    assert _answers(_write(tmp_path, _SPAN, _LLM, row)) == [("Business.", GOOD)]
    on_trace = {"trace_id": "t1", "name": "user_feedback", "annotator_kind": "HUMAN", "result": {"score": 0}}
    assert _answers(_write(tmp_path, _SPAN, _LLM, on_trace)) == [("Business.", BAD)]


def test_a_session_annotation_is_left_out(tmp_path: Path) -> None:
    on_session = {
        "session_id": "c1",
        "name": "user_feedback",
        "annotator_kind": "HUMAN",
        "result": {"label": "up"},
    }
    with observing() as seen:
        assert _answers(_write(tmp_path, _SPAN, _LLM, on_session)) == [("Business.", None)]
    assert seen.ignored == {"session annotation 'user_feedback': not on one answer": 1}
