"""Ingest: readers for each log format, feedback spellings, problems with file/line/field, and ingest_file."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from files import jsonl, write
from ragreplay.core.runs import SourceRecord
from ragreplay.core.types import Case, Conversation, Feedback, Role, Skip, TokenUsage
from ragreplay.errors import ConfigError, InputError
from ragreplay.ingest import (
    FieldMapping,
    detect_format,
    ingest_file,
    iter_conversations,
    iter_file_cases,
    parse_feedback,
    source_id_for,
    validate_file,
)
from ragreplay.ingest.feedback import FeedbackValueError
from ragreplay.ingest.flat import is_contiguous, read_flat

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
GOOD, BAD = Feedback.GOOD, Feedback.BAD


def convs(path: Path, fmt: str | None = None, mapping: FieldMapping | None = None) -> list[Conversation]:
    return [c for _, c in iter_conversations(path, fmt, mapping)]


def problems_of(path: Path, fmt: str | None = None, mapping: FieldMapping | None = None) -> InputError:
    with pytest.raises(InputError) as info:
        validate_file(path, fmt, mapping)
    return info.value


def where(err: InputError) -> list[tuple[int | None, str | None]]:
    return [(p.line, p.field) for p in err.problems]


def turn(role: str, content: str, feedback: Any = None) -> dict[str, Any]:
    return {"role": role, "content": content, "feedback": feedback}


# --- feedback ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("good", GOOD), ("BAD", BAD), ("Up", GOOD), ("down", BAD), ("thumbs_up", GOOD), ("Thumbs-Down", BAD),
        ("thumbs up", GOOD), ("like", GOOD), ("dislike", BAD), ("positive", GOOD), ("NEGATIVE", BAD),
        ("1", GOOD), ("0", BAD), ("+1", GOOD), ("-1", BAD), (1, GOOD), (0, BAD), (-1, BAD), (1.0, GOOD),
        ("true", GOOD), ("False", BAD), (True, GOOD), (False, BAD),
        (None, None), ("", None), ("  ", None), ("none", None), ("NULL", None),
    ],
)  # fmt: skip
def test_feedback_spellings(value: object, expected: Feedback | None) -> None:
    assert parse_feedback(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5, GOOD), (4, GOOD), ("4.0", GOOD), (3.9, BAD), ("1", BAD), (0, BAD), ("good", GOOD)],
)
def test_ratings_use_the_threshold(value: object, expected: Feedback) -> None:
    assert parse_feedback(value, rating_threshold=4) is expected


def test_synonyms_extend_and_override_the_spellings() -> None:
    synonyms = {"Meh": BAD, "solved": GOOD, "neutral": None}
    assert parse_feedback(" meh ", synonyms=synonyms) is BAD
    assert parse_feedback("SOLVED", synonyms=synonyms) is GOOD
    assert parse_feedback("neutral", synonyms=synonyms) is None


@pytest.mark.parametrize("value", ["maybe", 3, 0.5, "nan", [1], {"x": 1}])
def test_unknown_feedback_lists_accepted_values_and_how_to_configure(value: object) -> None:
    with pytest.raises(FeedbackValueError) as info:
        parse_feedback(value)
    assert "good/bad" in str(info.value) and "thumbs_up" in str(info.value)
    assert "feedback_synonyms" in info.value.fix and "rating_threshold" in info.value.fix


# --- format detection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("canonical_good.jsonl", "canonical"),
        ("flat_good.csv", "flat"),
        ("flat_scattered.csv", "flat"),
        ("openai_good.jsonl", "openai"),
    ],
)
def test_detects_fixture_formats(name: str, fmt: str) -> None:
    assert detect_format(LOGS / name) == fmt


def test_detection_rules(tmp_path: Path) -> None:
    ua = [turn("user", "q"), turn("assistant", "a")]
    assert detect_format(write(tmp_path, "a.jsonl", jsonl({"id": "c", "messages": ua}))) == "canonical"
    assert detect_format(write(tmp_path, "b.jsonl", jsonl({"messages": ua}))) == "openai"
    assert (
        detect_format(write(tmp_path, "c.jsonl", jsonl({"id": "c", "messages": ua, "metadata": {}})))
        == "openai"
    )
    row = {"conversation_id": "c", "role": "user", "content": "q"}
    assert detect_format(write(tmp_path, "d.jsonl", jsonl(row))) == "flat"
    assert detect_format(write(tmp_path, "e.log", "conversation_id,role,content\nc,user,q\n")) == "flat"
    mapped = FieldMapping(fields={"session": "conversation_id"})
    assert detect_format(write(tmp_path, "f.txt", "session,role,content\nc,user,q\n"), mapped) == "flat"
    with pytest.raises(InputError, match="cannot tell the log format"):
        detect_format(write(tmp_path, "g.jsonl", jsonl({"foo": 1})))


def test_format_override_and_unknown_format(tmp_path: Path) -> None:
    path = write(
        tmp_path, "a.jsonl", jsonl({"id": "c1", "messages": [turn("user", "q"), turn("assistant", "a")]})
    )
    assert detect_format(path) == "canonical"
    assert [c.id for c in convs(path, "canonical")] == ["c1"]
    assert convs(path, "openai")[0].id == "c1"
    with pytest.raises(ConfigError, match="canonical, flat, openai"):
        convs(path, "xml")


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        validate_file(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="file is empty"):
        validate_file(write(tmp_path, "empty.jsonl", ""))
    with pytest.raises(InputError, match="file is empty"):
        validate_file(write(tmp_path, "blank.jsonl", "\n  \n"), "canonical")
    with pytest.raises(InputError, match="header but no rows"):
        validate_file(write(tmp_path, "h.csv", "conversation_id,role,content\n"))


# --- canonical ----------------------------------------------------------------------------------------------


def test_canonical_reader_reads_every_field() -> None:
    lines_and_convs = list(iter_conversations(LOGS / "canonical_good.jsonl"))
    assert [line for line, _ in lines_and_convs] == [1, 3, 4]  # blank line 2 skipped
    c1 = lines_and_convs[0][1]
    assert c1.id == "conv_001" and c1.user_id == "u7"
    assert c1.tags == {"department": "hr", "priority": "2"}  # non-str tag values stringified
    assert [m.role for m in c1.messages] == [Role.HUMAN, Role.AI, Role.HUMAN, Role.AI]
    ai = c1.messages[1]
    assert ai.feedback is GOOD and c1.messages[3].feedback is BAD
    assert ai.ts == datetime(2026, 10, 1, 9, 14, 2, tzinfo=UTC)
    assert ai.retrieved[0].id == "doc12#3" and ai.retrieved[0].score == 0.81 and ai.retrieved[0].text
    assert ai.latency_ms == 840 and ai.tokens == TokenUsage(input=900, output=60)
    c2 = lines_and_convs[1][1]
    assert [m.role for m in c2.messages] == [Role.SYSTEM, Role.AI, Role.HUMAN, Role.TOOL, Role.AI, Role.AI]


def test_canonical_problems_name_line_and_field() -> None:
    err = problems_of(LOGS / "canonical_bad.jsonl")
    assert where(err) == [
        (2, None),  # invalid JSON
        (3, "messages[1].role"),  # unknown role
        (4, "messages[0].content"),  # missing content
        (4, "messages[1].feedback"),  # unknown feedback value
        (5, "messages[0].ts"),  # bad timestamp
        (5, "messages[1].role"),  # missing role
        (6, "id"),  # duplicate conversation id
    ]
    text = str(err)
    assert "canonical_bad.jsonl:2:" in text and "invalid JSON" in text
    assert "unknown role 'robot'" in text and "duplicate conversation id 'c1' (first used on line 1)" in text
    assert all(p.fix for p in err.problems)


def test_iter_conversations_yields_good_lines_then_raises() -> None:
    seen: list[str] = []
    with pytest.raises(InputError):
        for _, c in iter_conversations(LOGS / "canonical_bad.jsonl"):
            seen.append(c.id)
    assert seen == ["c1"]


def test_more_timestamps_and_numbers(tmp_path: Path) -> None:
    msgs = [
        {"role": "human", "content": "q", "ts": 1790000000},
        {"role": "ai", "content": "a", "ts": "1790000000000", "latency_ms": "12.5"},
        {"role": "human", "content": "q", "ts": "2026-10-01 09:14:00"},
        {"role": "ai", "content": "a", "retrieved": ["d1", 7], "tokens": {"input": 3, "output": 4}},
    ]
    (c,) = convs(write(tmp_path, "a.jsonl", jsonl({"id": 5, "messages": msgs})), "canonical")
    assert c.id == "5"
    assert c.messages[0].ts == c.messages[1].ts == datetime.fromtimestamp(1790000000, tz=UTC)
    assert c.messages[2].ts == datetime(2026, 10, 1, 9, 14, tzinfo=UTC)  # naive means UTC
    assert c.messages[1].latency_ms == 12.5
    assert [r.id for r in c.messages[3].retrieved] == ["d1", "7"]
    assert c.messages[3].tokens == TokenUsage(input=3, output=4)


def test_more_canonical_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.jsonl",
        jsonl(
            {"messages": [turn("human", "q")]},
            {"id": "b", "messages": []},
            {"id": "c", "messages": [{"role": "human", "content": 3}]},
            {
                "id": "d",
                "messages": [{"role": "ai", "content": "a", "latency_ms": -1, "tokens": {"in": 1.5}}],
            },
            {
                "id": "e",
                "tags": ["x"],
                "messages": [{"role": "ai", "content": "a", "retrieved": [{"score": 1}]}],
            },
            [1, 2],
        )
        + '{"id": "f", "messages": [\n',
    )
    err = problems_of(path, "canonical")
    assert where(err) == [
        (1, "id"),
        (2, "messages"),
        (3, "messages[0].content"),
        (4, "messages[0].latency_ms"),
        (4, "messages[0].tokens.in"),
        (5, "messages[0].retrieved[0]"),
        (5, "tags"),
        (6, None),
        (7, None),
    ]
    assert "the line ends too early" in err.problems[-1].message


def test_stops_after_twenty_problems_and_counts_more(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", "not json\n" * 30)
    err = problems_of(path, "canonical")
    assert len(err.problems) == 20 and err.more == 1  # reading stopped at the 21st problem
    assert [p.line for p in err.problems] == list(range(1, 21))
    assert "and 1 more problem" in str(err)


def test_encoding_problems_name_the_line(tmp_path: Path) -> None:
    good = jsonl({"id": "a", "messages": [turn("human", "Grüße")]})
    path = write(
        tmp_path, "a.jsonl", "\ufeff".encode() + good.encode() + '{"id": "b", "x": "é"}\n'.encode("latin-1")
    )
    err = problems_of(path, "canonical")
    assert where(err) == [(2, None)]
    assert "not valid UTF-8" in str(err) and "iconv" in str(err)
    assert convs(write(tmp_path, "b.jsonl", "\ufeff" + good))[0].messages[0].content == "Grüße"  # BOM ok
    csv_bytes = b"conversation_id,role,content\nc,user,hi\n" + "c,ai,Grüße\n".encode("latin-1")
    err = problems_of(write(tmp_path, "c.csv", csv_bytes))
    assert where(err) == [(3, None)]
    with pytest.raises(InputError, match="is UTF-16"):
        validate_file(write(tmp_path, "d.jsonl", good.encode("utf-16")))
    with pytest.raises(InputError, match="not valid UTF-8"):
        detect_format(write(tmp_path, "e.jsonl", "é\n".encode("latin-1")))


def test_ai_message_first_is_a_skip_not_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", jsonl({"id": "a", "messages": [turn("ai", "Welcome", "good")]}))
    summary = validate_file(path)
    assert summary.conversations == 1 and summary.cases == 0
    assert summary.skips_by_reason == {"ai_without_preceding_human": 1}


# --- flat ---------------------------------------------------------------------------------------------------


def test_flat_csv_orders_by_turn_and_reads_columns() -> None:
    result = list(iter_conversations(LOGS / "flat_good.csv"))
    assert [(line, c.id) for line, c in result] == [(2, "c1"), (5, "c2")]
    c1, c2 = (c for _, c in result)
    assert c1.messages[1].content == "Lisa is the head of HR,\nbased in Oslo."
    assert c1.messages[1].feedback is GOOD and c1.user_id == "u7" and c1.tags == {"department": "hr"}
    assert [r.id for r in c1.messages[1].retrieved] == ["doc12#3", "doc7"]
    assert c1.messages[0].ts == datetime(2026, 10, 1, 9, 14, tzinfo=UTC)
    assert [m.role for m in c2.messages] == [Role.HUMAN, Role.AI]  # sorted by turn
    assert c2.messages[1].feedback is BAD and [r.id for r in c2.messages[1].retrieved] == ["doc1"]


def test_flat_csv_problems_use_physical_lines(tmp_path: Path) -> None:
    text = 'conversation_id,role,content,feedback\nc1,user,"multi\nline\nquestion",\nc1,ai,answer,sometimes\n'
    err = problems_of(write(tmp_path, "a.csv", text))
    assert where(err) == [(5, "feedback")]
    err = problems_of(LOGS / "flat_bad.csv")
    assert where(err) == [
        (3, "feedback"),
        (4, "turn"),
        (4, "ts"),
        (5, "role"),
        (6, "conversation_id"),
        (7, None),
    ]


def test_flat_scattered_rows_are_grouped_through_sqlite() -> None:
    path = LOGS / "flat_scattered.csv"
    assert not is_contiguous(path, FieldMapping())
    result = [(line, c.id, [m.content for m in c.messages]) for line, c in iter_conversations(path)]
    assert result == [
        (2, "a", ["Question A", "Answer A"]),
        (3, "b", ["Question B", "Answer B"]),
        (6, "c", ["Question C", "Answer C"]),
    ]


def test_spooled_and_streamed_grouping_agree() -> None:
    path = LOGS / "flat_good.csv"
    assert is_contiguous(path, FieldMapping())
    streamed = list(read_flat(path, grouping="contiguous"))
    assert list(read_flat(path, grouping="spool")) == streamed


def test_flat_jsonl_with_mapping_threshold_and_role_synonyms() -> None:
    mapping = FieldMapping.from_dict(
        {
            "fields": {
                "session": "conversation_id",
                "speaker": "role",
                "text": "content",
                "rating": "feedback",
            },
            "role_synonyms": {"customer": "human", "agent": "ai"},
            "rating_threshold": 4,
        }
    )
    result = convs(LOGS / "flat_rows.jsonl", None, mapping)
    assert [c.id for c in result] == ["s1", "s2"]
    assert [m.feedback for m in result[0].messages] == [BAD, GOOD]
    assert [r.id for r in result[0].messages[1].retrieved] == ["orders#1"]
    cases = list(iter_file_cases(LOGS / "flat_rows.jsonl", None, mapping))
    assert [(c.conversation_id, c.feedback) for c in cases] == [("s1", GOOD), ("s2", BAD)]


def test_flat_missing_column_says_how_to_map_it(tmp_path: Path) -> None:
    err = problems_of(write(tmp_path, "a.csv", "session,role,content\nx,user,q\n"), "flat")
    assert where(err) == [(1, "conversation_id")]
    assert "fields: {your_column: conversation_id}" in err.problems[0].fix


def test_flat_duplicate_turn_and_tags_column(tmp_path: Path) -> None:
    text = 'conversation_id,turn,role,content,tags\nc,1,user,q,"{""a"": 1}"\nc,1,ai,a,\n'
    err = problems_of(write(tmp_path, "a.csv", text))
    assert where(err) == [(3, "turn")] and "repeats line 2" in str(err)
    (c,) = convs(write(tmp_path, "b.csv", text.replace("c,1,ai", "c,2,ai")))
    assert c.tags == {"a": "1"}


# --- openai -------------------------------------------------------------------------------------------------


def test_openai_reader() -> None:
    c1, c2 = convs(LOGS / "openai_good.jsonl")
    assert c1.id.startswith("oa_") and c1.id == convs(LOGS / "openai_good.jsonl")[0].id  # stable id
    assert c1.messages[1].content == "Who is Lisa?"  # content parts joined
    assert c1.tags == {"department": "hr"} and c1.user_id == "u1"
    assert c1.messages[2].feedback is GOOD
    assert c2.id == "oa-2" and c2.user_id == "u2"
    assert [m.role for m in c2.messages] == [Role.HUMAN, Role.TOOL, Role.TOOL, Role.AI, Role.HUMAN, Role.AI]
    assert [m.feedback for m in c2.messages] == [None, None, None, GOOD, None, BAD]  # top-level list aligned
    cases = list(iter_file_cases(LOGS / "openai_good.jsonl"))
    assert [(c.query, c.old_answer) for c in cases][1:] == [
        ("Weather?", "Sunny."),
        ("Thanks", "You are welcome."),
    ]


def test_openai_feedback_list_problems() -> None:
    err = problems_of(LOGS / "openai_bad.jsonl")
    assert where(err) == [(1, "feedback"), (2, "messages[1].feedback")]


# --- mapping ------------------------------------------------------------------------------------------------


def test_field_mapping_from_yaml_and_bad_config(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yaml", "fields: {speaker: role}\nfeedback_synonyms: {meh: bad, ok: null}\n")
    mapping = FieldMapping.from_yaml(path)
    assert mapping.canonical("speaker") == "role" and mapping.feedback_synonyms == {"meh": BAD, "ok": None}
    with pytest.raises(ConfigError, match="cannot map to rol"):
        FieldMapping.from_dict({"fields": {"speaker": "rol"}})
    with pytest.raises(ConfigError, match="rating_threshold"):
        FieldMapping.from_dict({"rating_treshold": 3})
    with pytest.raises(ConfigError, match="not found"):
        FieldMapping.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        FieldMapping.from_yaml(write(tmp_path, "bad.yaml", "fields: {a: [\n"))


# --- ingest_file --------------------------------------------------------------------------------------------


class FakeStore:
    """Keeps what write_source consumed, all or nothing, like a transaction."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceRecord] = {}
        self.items: list[tuple[Conversation, Sequence[Case], Sequence[Skip]]] = []
        self.writes = 0

    @property
    def cases(self) -> FakeStore:
        return self

    def has_source(self, source_id: str) -> bool:
        return source_id in self.sources

    def write_source(
        self, source: SourceRecord, items: Iterable[tuple[Conversation, Sequence[Case], Sequence[Skip]]]
    ) -> SourceRecord:
        staged = list(items)  # an exception here is a rollback: nothing kept
        self.writes += 1
        counted = source.model_copy(
            update={
                "n_conversations": len(staged),
                "n_cases": sum(len(cases) for _, cases, _ in staged),
                "n_skipped": sum(len(skips) for _, _, skips in staged),
            }
        )
        self.sources[source.id] = counted
        self.items.extend(staged)
        return counted


def test_ingest_writes_once_and_reingest_is_a_no_op() -> None:
    store = FakeStore()
    path = LOGS / "canonical_good.jsonl"
    summary = ingest_file(path, store)
    assert summary.written and not summary.already_ingested
    assert summary.source_id == source_id_for(path) and summary.source_id.startswith("src_")
    assert len(summary.source_id) == 20
    assert (summary.conversations, summary.messages, summary.cases, summary.skipped) == (3, 12, 3, 5)
    assert summary.cases_by_feedback == {"bad": 1, "good": 2}
    record = store.sources[summary.source_id]
    assert (record.n_conversations, record.n_cases, record.n_skipped, record.format) == (3, 3, 5, "canonical")
    assert [c.id for c, _, _ in store.items] == ["conv_001", "conv_002", "conv_003"]
    assert sum(len(cases) for _, cases, _ in store.items) == 3
    again = ingest_file(path, store)
    assert again.already_ingested and not again.written and store.writes == 1


def test_malformed_file_writes_nothing() -> None:
    store = FakeStore()
    with pytest.raises(InputError):
        ingest_file(LOGS / "canonical_bad.jsonl", store)
    assert store.writes == 0 and not store.sources and not store.items


def test_dry_run_counts_without_writing() -> None:
    store = FakeStore()
    summary = ingest_file(LOGS / "openai_good.jsonl", store, dry_run=True)
    assert summary.dry_run and not summary.written and store.writes == 0
    assert summary.cases == 3 and summary.skips_by_reason == {"system_or_tool_message": 3}
    assert ingest_file(LOGS / "openai_good.jsonl", None, dry_run=True).cases == 3


def test_progress_follows_the_single_pass(tmp_path: Path) -> None:
    rows = [{"id": f"c{i}", "messages": [turn("human", "q"), turn("ai", "a", "good")]} for i in range(5000)]
    path = write(tmp_path, "a.jsonl", jsonl(*rows))
    calls: list[tuple[int, int]] = []
    ingest_file(path, FakeStore(), progress=lambda done, total: calls.append((done, total)))
    size = path.stat().st_size
    assert {total for _, total in calls} == {size}
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1][0] == size and len(calls) > 4


def test_file_changed_while_ingesting_rolls_back(tmp_path: Path) -> None:
    path = write(
        tmp_path, "a.jsonl", jsonl({"id": "a", "messages": [turn("human", "q"), turn("ai", "a", 1)]})
    )

    class Appending(FakeStore):
        def write_source(self, source: SourceRecord, items: Iterable[Any]) -> SourceRecord:
            with path.open("a") as fh:
                fh.write(jsonl({"id": "b", "messages": [turn("human", "q")]}))
            return super().write_source(source, items)

    store = Appending()
    with pytest.raises(InputError, match="changed while it was being ingested"):
        ingest_file(path, store)
    assert not store.sources


def test_ingest_into_a_real_sqlite_store(tmp_path: Path) -> None:
    store_mod = pytest.importorskip("ragreplay.store")
    store = store_mod.Store.open(str(tmp_path / "rr.sqlite"))
    first = ingest_file(LOGS / "flat_good.csv", store)
    assert first.written and store.cases.count_cases() == 2
    assert ingest_file(LOGS / "flat_good.csv", store).already_ingested and store.cases.count_cases() == 2
    with pytest.raises(InputError):
        ingest_file(LOGS / "flat_bad.csv", store)
    assert store.cases.count_cases() == 2 and not store.cases.has_source(source_id_for(LOGS / "flat_bad.csv"))
    assert {c.feedback for c in store.cases.iter_cases()} == {GOOD, BAD}


# --- streaming ----------------------------------------------------------------------------------------------


@pytest.mark.slow  # tracemalloc makes ingest ~4x slower: ~8 s here, ~2.5 s untraced
def test_dry_run_streams_a_large_log_in_flat_memory(tmp_path: Path) -> None:
    padding = "x" * 60
    msgs = []
    for t in range(10):  # 20 messages a conversation, every fifth answer labelled
        msgs.append({"role": "human", "content": f"question CONV-{t} {padding}"})
        label = ("good", "bad")[t % 2] if t % 5 == 0 else None
        msgs.append({"role": "ai", "content": f"answer {padding}", "feedback": label})
    template = json.dumps({"id": "CONV", "messages": msgs}) + "\n"
    path = tmp_path / "big.jsonl"
    path.write_text("".join(template.replace("CONV", f"c{i}") for i in range(10_000)), encoding="utf-8")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        summary = ingest_file(path, None, dry_run=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary.messages == 200_000 and summary.conversations == 10_000
    assert summary.cases_by_feedback == {"good": 10_000, "bad": 10_000}
    assert summary.skips_by_reason == {"no_feedback": 80_000}
    assert peak < size / 5, (peak, size)  # about 2 MB (mostly the ids seen, for duplicates) for 23 MB


def test_flat_token_latency_columns_and_file_order_without_full_turns(tmp_path: Path) -> None:
    text = (
        "conversation_id,turn,role,content,latency_ms,tokens_in,tokens_out\nc,,user,q,,,\nc,0,ai,a,12,30,4\n"
    )
    (c,) = convs(write(tmp_path, "a.csv", text))
    assert [m.role for m in c.messages] == [Role.HUMAN, Role.AI]  # not every row has a turn: file order
    assert c.messages[1].latency_ms == 12 and c.messages[1].tokens == TokenUsage(input=30, output=4)
    err = problems_of(write(tmp_path, "b.csv", text.replace("30,4", "x,4")))
    assert where(err) == [(3, "tokens_in")]
