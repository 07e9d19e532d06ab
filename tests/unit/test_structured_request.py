"""The shared builder of fenced structured judge requests (judges/structured.py)."""

from __future__ import annotations

from ragreplay.judges.structured import (
    numbered_chunks,
    structured_prompt_version,
    structured_request,
    structured_system,
)

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}


def test_the_version_changes_with_every_part_of_the_prompt() -> None:
    base = structured_prompt_version("x-1", "system", "user", {"a": 1}, SCHEMA)
    assert base.startswith("x-1.") and len(base) == len("x-1.") + 8
    assert base == structured_prompt_version("x-1", "system", "user", {"a": 1}, SCHEMA)
    others = {
        structured_prompt_version("x-1", "system!", "user", {"a": 1}, SCHEMA),
        structured_prompt_version("x-1", "system", "user!", {"a": 1}, SCHEMA),
        structured_prompt_version("x-1", "system", "user", {"a": 2}, SCHEMA),
        structured_prompt_version("x-1", "system", "user", {"a": 1}, {"type": "object"}),
        structured_prompt_version("x-1", "system", "user", {"a": 1}, SCHEMA, rubric={"name": "r"}),
    }
    assert base not in others and len(others) == 5


def test_the_system_message_holds_the_data_rules_the_example_and_the_fields() -> None:
    text = structured_system(
        "{rules}\n{name}\n{example}", ("question", "contexts"), "check", {"k": "v"}, name="N"
    )
    rules, name, example = text.split("\n")
    assert "<question>, <contexts>" in rules and "data to check" in rules
    assert (name, example) == ("N", '{"k": "v"}')


def test_chunks_are_numbered_from_one() -> None:
    assert numbered_chunks([("a", "first"), ("b", "second")]) == "[1] a\nfirst\n\n[2] b\nsecond"
    assert numbered_chunks([]) == ""


def test_the_request_asks_for_the_schema_at_temperature_zero() -> None:
    request = structured_request(
        system="S",
        user="U",
        schema_name="check",
        schema=SCHEMA,
        prompt_version="x-1.abc",
        task="t",
        hints={"h": 1},
    )
    assert [(m.role, m.content) for m in request.messages] == [("system", "S"), ("user", "U")]
    assert request.temperature == 0.0 and request.prompt_version == "x-1.abc" and request.task == "t"
    assert request.response_format is not None and request.response_format.json_schema == SCHEMA
    assert request.response_format.name == "check" and request.hints == {"h": 1}
