"""Payload readers (ingest/trace_text.py): the shapes the real files hold, in their smallest form, and limits."""

from __future__ import annotations

import json

from ragreplay.core.types import Role
from ragreplay.ingest.trace_text import answer_of, chat_messages, history_of, maybe_json, question_of


def test_json_text_inside_json_text_is_decoded_layer_by_layer_up_to_a_limit() -> None:
    assert maybe_json(json.dumps(json.dumps("What is Langfuse?"))) == "What is Langfuse?"
    assert maybe_json(json.dumps(json.dumps({"a": 1}))) == {"a": 1}
    deep = "x"
    for _ in range(12):
        deep = json.dumps(deep)
    assert isinstance(maybe_json(deep), str) and maybe_json(deep) != "x"  # 8 layers, then left as text
    assert maybe_json('{"not json') == '{"not json'
    assert maybe_json('"quoted" and more') == '"quoted" and more'


def test_a_python_repr_of_a_dict_of_literals_is_read_and_nothing_else_is_evaluated() -> None:
    assert answer_of("{'role': 'assistant', 'text': \"It's sunny.\"}") == "It's sunny."
    assert maybe_json("{'a': __import__('os')}") == "{'a': __import__('os')}"


def test_agent_state_answer_is_the_final_ai_message_not_the_state() -> None:
    state = {
        "messages": [
            {"type": "human", "content": "Weather in Paris?"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "weather", "args": {}}]},
            {"type": "tool", "content": "18C"},
            {"type": "ai", "content": "It is 18C in Paris."},
        ]
    }
    assert question_of(json.dumps(state)) == "Weather in Paris?"
    assert answer_of(json.dumps(state)) == "It is 18C in Paris."


def test_responses_api_items_and_output() -> None:
    items = [
        {"role": "user", "content": "Weather in Tokyo?"},
        {"type": "function_call", "name": "get_weather", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    assert chat_messages(items) == [(Role.HUMAN, "Weather in Tokyo?"), (Role.AI, ""), (Role.TOOL, "")]
    assert question_of(items) == "Weather in Tokyo?"
    response = {
        "object": "response",
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
        ],
    }
    assert answer_of(response) == "Sunny."
    tool_only = {"object": "response", "output": [{"type": "function_call", "name": "f", "arguments": "{}"}]}
    assert answer_of(tool_only) == ""


def test_gemini_contents_candidates_and_new_message() -> None:
    request = {"contents": [{"role": "user", "parts": [{"text": "What is RAG?"}]}], "model": "gemini"}
    assert question_of(request) == "What is RAG?"
    assert question_of({"model": "gemini", "contents": "What is RAG?"}) == "What is RAG?"
    assert question_of({"user_id": "u", "new_message": {"role": "user", "parts": [{"text": "hi"}]}}) == "hi"
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Retrieval..."}]}}]}
    assert answer_of(reply) == "Retrieval..."


def test_history_leaves_out_tool_call_turns_without_text() -> None:
    chat = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "result"},
        {"role": "assistant", "content": "answer one"},
        {"role": "user", "content": "second"},
    ]
    assert history_of(chat) == [(Role.HUMAN, "first"), (Role.AI, "answer one")]
    assert question_of(chat) == "second"


def test_a_traced_functions_lone_argument_is_the_question() -> None:
    assert question_of({"args": ["programming"], "kwargs": {}}) == "programming"
    assert question_of({"args": ["a", "b"]}) == ""
