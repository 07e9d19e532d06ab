"""Reading answers out of replies: JSON, server-sent-event streams in the common shapes, and plain text."""

from __future__ import annotations

import json

import pytest

from ragreplay.shadow.payloads import RequestFields, is_event_stream, parse_reply, sse_events

SSE = "text/event-stream; charset=utf-8"


def sse(*events: object) -> bytes:
    return "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events).encode()


def test_json_reply_with_contexts_and_request_id() -> None:
    body = json.dumps({"id": 41, "answer": "Ja.", "contexts": [{"id": "cao#12"}]}).encode()
    got = parse_reply(body, "application/json", RequestFields(contexts_path="contexts", request_id_path="id"))
    assert got.answer.text == "Ja." and [c.id for c in got.answer.contexts] == ["cao#12"]
    assert got.request_id == "41"
    with pytest.raises(ValueError, match="answer path 'answer'"):
        parse_reply(b'{"text": "x"}', "application/json", RequestFields())
    with pytest.raises(ValueError):
        parse_reply(b"<html>oops</html>", "text/html", RequestFields())


def test_openai_style_stream_is_joined_and_done_is_skipped() -> None:
    chunks = [
        {"id": "c1", "choices": [{"delta": {"content": piece}}]}
        for piece in ("Werk", "nemers krijgen ", "25 dagen.")
    ]
    body = sse({"id": "c1", "choices": [{"delta": {"role": "assistant"}}]}, *chunks, "[DONE]")
    got = parse_reply(body, SSE, RequestFields(request_id_path="id"))
    assert got.answer.text == "Werknemers krijgen 25 dagen."
    assert got.request_id == "c1"


def test_custom_stream_with_contexts_first_and_a_final_full_answer() -> None:
    fields = RequestFields(contexts_path="sources")
    body = sse({"sources": ["hr#1", "hr#2"]}, {"delta": "25 "}, {"delta": "dagen"})
    got = parse_reply(body, SSE, fields)
    assert got.answer.text == "25 dagen" and [c.id for c in got.answer.contexts] == ["hr#1", "hr#2"]
    final = sse({"token": "25"}, {"token": " dgn"}, {"answer": "25 dagen per jaar."})
    assert parse_reply(final, SSE, fields).answer.text == "25 dagen per jaar."  # the full answer wins
    custom = sse({"out": {"t": "a"}}, {"out": {"t": "b"}})
    assert parse_reply(custom, SSE, RequestFields(stream_text_path="out.t")).answer.text == "ab"


def test_bare_text_pieces_multiline_data_and_detection_without_a_content_type() -> None:
    body = b": keep-alive\n\nevent: token\ndata: Hallo\n\ndata: regel 1\ndata: regel 2\n\n"
    assert is_event_stream(body, None) and not is_event_stream(b'{"a": 1}', None)
    assert sse_events(body) == ["Hallo", "regel 1\nregel 2"]
    assert parse_reply(body, None, RequestFields()).answer.text == "Halloregel 1\nregel 2"
    with pytest.raises(ValueError, match="no answer text"):
        parse_reply(sse("[DONE]"), SSE, RequestFields())


def test_plain_text_replies() -> None:
    assert parse_reply(b"  Ja, 25 dagen.\n", "text/plain; charset=utf-8", RequestFields()).answer.text == (
        "Ja, 25 dagen."
    )
    with pytest.raises(ValueError, match="empty"):
        parse_reply(b"  ", "text/markdown", RequestFields())
