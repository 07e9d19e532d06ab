"""The canonical reader's fast path reads a line to exactly what the careful reader reads, or leaves it to it.

Every line below goes through both: the careful reader (field by field, naming each problem) and the fast path.
The fast path must give the same conversation, or ``None``; it must never accept a line the careful reader
finds a problem in. Mixed files read the same whichever path took each line.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from ragreplay.core.ids import case_id, content_hash
from ragreplay.core.types import Conversation
from ragreplay.ingest import iter_conversations
from ragreplay.ingest.canonical import conversation_from_object
from ragreplay.ingest.canonical_fast import fast_conversation, fast_reader
from ragreplay.ingest.jsonl import IdRegistry, line_objects
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.ingest.problems import ProblemLog, Record

# Values each field may take: well-formed ones, other spellings the careful reader accepts, and mistakes.
IDS: list[Any] = ["c1", " c1", "", 7, True, None, "  "]
ROLES: list[Any] = ["human", "ai", "user", "assistant", "Human", "system", "tool", "robot", None, 3]
CONTENTS: list[Any] = ["Hi?", "", [{"type": "text", "text": "a"}], None, 5]
FEEDBACK: list[Any] = ["good", "bad", "GOOD", "thumbs_up", "none", "", 1, 0, -1, 4, True, "meh", None, 1.5]
TS: list[Any] = [
    "2026-10-01T09:14:00Z",
    "2026-10-01T09:14:00",
    "2026-10-01 09:14:00+02:00",
    "2026-10-01",
    "2026-10-01T09:14:00.1234567Z",
    1_700_000_000,
    1_700_000_000_000,
    50_000_000_000,
    "1700000000",
    "",
    "yesterday",
    True,
    -1,
    10**400,
    None,
]
RETRIEVED: list[Any] = [
    [{"id": "d1", "score": 0.8}],
    [{"id": "d1", "score": 0.8, "text": "t", "source": "x"}],
    [{"id": "d1", "score": -0.1}],
    [{"id": "d1", "score": "0.8"}],
    [{"id": "d1", "score": None}],
    [{"id": 3}],
    [{"id": "d1", "text": 5}],
    ["d1", "d2"],
    "d1;d2",
    '["d1"]',
    [],
    None,
    {"id": "d1"},
]
LATENCY: list[Any] = [120, 0.5, -1, "12", "", None, True, 10**400]
TOKENS: list[Any] = [
    {"input": 9, "output": 1},
    {"input": 9},
    {},
    {"in": 9, "out": 1},
    {"prompt_tokens": 9},
    {"input": -1},
    {"input": 9.0},
    {"input": True},
    {"input": 2**60},
    [9, 1],
    None,
]


def careful(obj: Any, mapping: FieldMapping | None = None) -> tuple[Conversation | None, list[str]]:
    """The careful reader's result for one line: the conversation (or None) and its problems."""
    mapping = mapping or FieldMapping()
    log = ProblemLog("f.jsonl")
    rec = Record(log, 1)
    objects = line_objects(rec, json.dumps(obj) if not isinstance(obj, str) else obj)
    conv = (
        conversation_from_object(mapping.rename(objects[0]), rec, mapping, IdRegistry()) if objects else None
    )
    return (conv if rec.ok else None), [p.message for p in log.problems]


def check(obj: Any) -> bool:
    """Assert the fast path agrees with the careful reader on ``obj``; True if the fast path took it."""
    text = obj if isinstance(obj, str) else json.dumps(obj)
    slow, problems = careful(obj)
    fast = fast_conversation(text)
    if fast is None:
        return False
    assert not problems, f"fast path accepted a line with problems {problems}: {text}"
    assert fast == slow, text
    assert fast.model_dump_json() == slow.model_dump_json(), text
    return True


def message(**fields: Any) -> dict[str, Any]:
    """A message with the given fields, leaving out the ones given as the string 'absent'."""
    return {k: v for k, v in fields.items() if not (isinstance(v, str) and v == "absent")}


def test_every_value_of_every_field_reads_the_same_or_goes_to_the_careful_reader() -> None:
    base = {"role": "ai", "content": "A.", "feedback": "good"}
    taken = 0
    for field, values in [
        ("role", ROLES),
        ("content", CONTENTS),
        ("feedback", FEEDBACK),
        ("ts", TS),
        ("retrieved", RETRIEVED),
        ("latency_ms", LATENCY),
        ("tokens", TOKENS),
    ]:
        for value in values:
            line: dict[str, Any] = {
                "id": "c1",
                "messages": [{"role": "human", "content": "Q?"}, {**base, field: value}],
            }
            taken += check(line)
    for conv_id, user_id, tags in itertools.product(
        IDS, ["u7", 7, None, ""], [{"a": "b"}, {"a": 1}, {"a": None}, None, "x"]
    ):
        conv: dict[str, Any] = {"id": conv_id, "user_id": user_id, "tags": tags, "messages": [base]}
        taken += check(conv)
    assert taken > 40  # the well-formed spellings did take the fast path


def test_random_conversations_read_the_same() -> None:
    rng = random.Random(13)
    taken = 0
    for _ in range(600):
        messages = [
            message(
                role=rng.choice(ROLES[:7]),
                content=rng.choice(CONTENTS[:3]),
                feedback=rng.choice([*FEEDBACK[:8], "absent", "absent"]),
                ts=rng.choice([*TS[:9], "absent"]),
                retrieved=rng.choice([*RETRIEVED[:5], "absent"]),
                latency_ms=rng.choice([120, 0.5, None, "absent"]),
                tokens=rng.choice([{"input": 9, "output": 1}, {}, None, "absent"]),
                extra=rng.choice([{"k": 1}, "absent"]),
            )
            for _ in range(rng.randint(1, 6))
        ]
        obj = {"id": f"c{rng.randint(0, 9)}", "messages": messages, "meta": rng.choice([None, {"x": [1]}])}
        taken += check(obj)
    assert taken > 30  # the well-formed ones did take the fast path


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "c1", "messages": [{"role": "human", "content": "bad \\ud800 text"}]}',
        '{"id": "c1", "n": ' + "9" * 5000 + ', "messages": [{"role": "human", "content": "Q"}]}',
        '{"id": "c1", "x": ' + "[" * 5000 + "]" * 5000 + ', "messages": [{"role": "human", "content": "Q"}]}',
        '{"id": "c1", "messages": [{"role": "human", "content": "Q", "retrieved_ids": "d1;d2"}]}',
        '{"id": "c1", "messages": [{"role": "human", "content": "Q", "tokens_in": 4}]}',
        '{"conversation_id": "c1", "messages": [{"role": "human", "content": "Q"}]}',
        '{"id": "c1", "messages": []}',
        '{"id": "c1", "messages": [{"role": "human", "content": "Q", "latency_ms": NaN}]}',
        '{"id": "c1", "messages": "none"}',
        '["not", "an", "object"]',
        '{"id": "c1", "messages": [{"role": "human", "content": "Q"}',
    ],
)
def test_lines_the_careful_reader_must_read(text: str) -> None:
    assert fast_conversation(text) is None


def test_a_mapping_that_renames_or_respells_turns_the_fast_path_off() -> None:
    assert fast_reader(FieldMapping()) is not None
    assert fast_reader(FieldMapping(rating_threshold=4)) is not None
    assert fast_reader(FieldMapping(fields={"session": "id"})) is None
    assert fast_reader(FieldMapping(role_synonyms={"bot2": "ai"})) is None
    assert fast_reader(FieldMapping(feedback_synonyms={"meh": "bad"})) is None


def test_numeric_feedback_follows_the_mappings_rating_threshold() -> None:
    line = json.dumps(
        {
            "id": "c1",
            "messages": [{"role": "human", "content": "Q"}, {"role": "ai", "content": "A", "feedback": 4}],
        }
    )
    reader = fast_reader(FieldMapping(rating_threshold=4))
    assert reader is not None
    conv = reader(line)
    assert conv is not None and conv.messages[1].feedback == "good"
    assert (
        fast_conversation(line) is None
    )  # without a threshold 4 is no feedback value: the careful reader says so


def test_a_file_mixing_both_paths_reads_as_the_careful_reader_alone(tmp_path: Path) -> None:
    lines = [
        {
            "id": "a",
            "messages": [
                {"role": "human", "content": "Q"},
                {"role": "ai", "content": "A", "feedback": "good"},
            ],
        },
        {
            "id": "b",
            "messages": [{"role": "User", "content": "Q"}, {"role": "bot", "content": "A", "feedback": "up"}],
        },
        {"id": 3, "messages": [{"role": "human", "content": [{"type": "text", "text": "Q"}]}]},
        {
            "id": "d",
            "tags": {"n": 1},
            "messages": [{"role": "human", "content": "Q", "ts": "2026-10-01T09:14:00"}],
        },
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    both = list(iter_conversations(log, "canonical"))
    careful_only = list(iter_conversations(log, "canonical", FieldMapping(role_synonyms={"x": "ai"})))
    assert both == careful_only and [conv.id for _, conv in both] == ["a", "b", "3", "d"]


def test_a_duplicate_id_is_a_problem_on_the_fast_path_too(tmp_path: Path) -> None:
    line = json.dumps({"id": "a", "messages": [{"role": "human", "content": "Q"}]})
    log = tmp_path / "log.jsonl"
    log.write_text(f"{line}\n{line}\n", encoding="utf-8")
    problems = ProblemLog(str(log))
    assert [n for n, _ in iter_conversations(log, "canonical", problems=problems)] == [1]
    assert [(p.line, p.field) for p in problems.problems] == [(2, "id")]
    assert "duplicate conversation id 'a' (first used on line 1)" in problems.problems[0].message


def test_case_ids_are_the_content_hash_they_always_were() -> None:
    texts = ["", "a", 'q"uote', "back\\slash", "ctl\x00\x1f\x7f", "uni é 漢 😀", "tab\tnl\n", "\u2028", "/"]
    for conversation_id, text in itertools.product(texts, texts):
        for turn in (0, 7, 10**20):
            expected = "case_" + content_hash([conversation_id, turn, text, text[::-1]])
            assert case_id(conversation_id, turn, text, text[::-1]) == expected
