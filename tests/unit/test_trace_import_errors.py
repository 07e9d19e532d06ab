"""Trace importers: a bad record is reported with its file, line, field and fix, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.errors import InputError
from ragreplay.ingest import FieldMapping, ingest_file, validate_file
from ragreplay.store import Store

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"


def lines_of(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (TRACES / name).read_text().splitlines()]


def problems(
    path: Path, fmt: str, mapping: FieldMapping | None = None
) -> list[tuple[int | None, str | None]]:
    with pytest.raises(InputError) as info:
        validate_file(path, fmt, mapping or FieldMapping(rating_threshold=4))
    for problem in info.value.problems:
        assert problem.file == str(path) and problem.fix, problem
    return [(p.line, p.field) for p in info.value.problems]


def message(path: Path, fmt: str, mapping: FieldMapping | None = None) -> str:
    with pytest.raises(InputError) as info:
        validate_file(path, fmt, mapping)
    return str(info.value)


def test_a_rating_without_a_threshold_names_the_scores_line_and_the_fix() -> None:
    records = lines_of("langfuse.jsonl")
    line = 1 + next(i for i, r in enumerate(records) if r.get("name") == "user_rating")
    text = message(TRACES / "langfuse.jsonl", "langfuse", FieldMapping())
    assert f"langfuse.jsonl:{line}" in text and "value" in text and "rating_threshold" in text


def test_langfuse_bad_records(tmp_path: Path) -> None:
    trace = {"id": "t1", "sessionId": "s1", "input": "q?", "output": "a", "timestamp": "2026-03-02T09:00:00Z"}
    rows = [
        trace,
        {"traceId": "t1", "name": "user-feedback", "value": 2, "dataType": "CATEGORICAL"},  # label missing
        {"traceId": "t9", "name": "thumbs", "value": 1, "dataType": "BOOLEAN"},  # trace not in the file
        {"id": "o1", "type": "SPAN", "startTime": "soon"},  # no traceId, bad time
        {"traceId": "t1", "name": "feedback", "value": "meh", "dataType": "NUMERIC", "timestamp": 5},
        {"id": "t1", "input": "again"},  # the trace twice
    ]
    path = write(tmp_path, "lf.jsonl", jsonl(*rows))
    assert problems(path, "langfuse") == [
        (2, "stringValue"),
        (4, "traceId"),
        (4, "startTime"),
        (5, "value"),
        (6, "id"),
    ]  # the unknown trace is checked once the file reads clean
    path = write(tmp_path, "lf2.jsonl", jsonl(trace, rows[2]))
    assert problems(path, "langfuse") == [(2, "value")]
    assert "'t9', which is not in this file" in message(path, "langfuse")


def test_langsmith_bad_records(tmp_path: Path) -> None:
    run = {"id": "r1", "run_type": "chain", "inputs": {"question": "q?"}, "outputs": {"answer": "a"}}
    mixed = {**run, "id": "r2", "feedback_stats": {"thumbs": {"n": 3, "avg": 0.33, "values": {}}}}
    rows = [
        run,
        {"run_type": "llm", "start_time": "2026-13-40"},
        mixed,
        {"key": "thumbs", "run_id": "r1", "value": "so-so"},
        {"hello": "world"},
    ]
    path = write(tmp_path, "ls.jsonl", jsonl(*rows))
    assert problems(path, "langsmith") == [
        (2, "id"),
        (2, "start_time"),
        (3, "feedback_stats.thumbs"),
        (4, "value"),
        (5, None),
    ]
    assert "Client.list_feedback" in message(path, "langsmith")
    unknown = write(tmp_path, "ls2.jsonl", jsonl(run, {"key": "thumbs", "run_id": "r404", "score": 1}))
    assert problems(unknown, "langsmith") == [(2, "score")]


def test_openinference_bad_records(tmp_path: Path) -> None:
    span = {"context": {"trace_id": "t1", "span_id": "s1"}, "parent_id": None, "span_kind": "CHAIN",
            "attributes": {"input.value": "q?", "output.value": "a"}}  # fmt: skip
    rows = [
        span,
        {"context": {"trace_id": "t1"}, "span_kind": "LLM", "start_time": "late"},
        {"span_id": "s1", "label": "good"},  # no name
        {"span_id": "s1", "name": "user_feedback", "result": {"label": "meh", "score": None}},
    ]
    path = write(tmp_path, "px.jsonl", jsonl(*rows))
    assert problems(path, "openinference") == [
        (2, "context.span_id"),
        (2, "start_time"),
        (3, "name"),
        (4, "result.label"),
    ]
    unknown = write(tmp_path, "px2.jsonl", jsonl(span, {"span_id": "nope", "name": "thumbs", "score": 1}))
    assert problems(unknown, "openinference") == [(2, "score")]


def test_otel_bad_records(tmp_path: Path) -> None:
    event = {"name": "gen_ai.evaluation.result", "attributes": [
        {"key": "gen_ai.evaluation.name", "value": {"stringValue": "user_feedback"}},
        {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "meh"}}]}  # fmt: skip
    bad_span = {"spanId": "s1", "startTimeUnixNano": "yesterday"}
    judged = {"traceId": "t1", "spanId": "s2", "events": [event]}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [bad_span, judged]}]}]}
    path = write(tmp_path, "otel.jsonl", jsonl({"spans": []}, doc) + "{not json\n")
    where = "resourceSpans[0].scopeSpans[0].spans"
    assert problems(path, "otel") == [
        (1, None),
        (2, f"{where}[0].traceId"),
        (2, f"{where}[0].startTimeUnixNano"),
        (2, f"{where}[1].events[0].attributes[gen_ai.evaluation.score.label]"),
        (3, None),
    ]


def test_a_bad_trace_file_writes_nothing(tmp_path: Path, store_url: str) -> None:
    path = write(tmp_path, "otel.jsonl", (TRACES / "otel_genai.jsonl").read_text() + '{"spans": 1}\n')
    with Store.open(store_url) as store:
        with pytest.raises(InputError) as info:
            ingest_file(path, store, "otel", FieldMapping(rating_threshold=4))
        assert [(p.line, p.field) for p in info.value.problems] == [(7, None)]
        assert store.cases.list_sources() == []
        summary = ingest_file(TRACES / "otel_genai.jsonl", store, None, FieldMapping(rating_threshold=4))
        assert (summary.format, summary.conversations, summary.cases) == ("otel", 3, 5)
        assert summary.cases_by_feedback == {"good": 2, "bad": 3}


@pytest.mark.parametrize("name", ["langfuse.jsonl", "langsmith.jsonl", "phoenix.jsonl", "otel_genai.jsonl"])
def test_an_export_over_the_record_cap_is_refused_with_a_fix(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragreplay.ingest import json_records

    cap = len(lines_of(name)) - 1
    monkeypatch.setattr(json_records, "MAX_TRACE_RECORDS", cap)
    text = message(TRACES / name, _FORMATS[name])
    assert f"more than {cap:,} records in one export" in text and "shorter time window" in text


_FORMATS = {
    "langfuse.jsonl": "langfuse",
    "langsmith.jsonl": "langsmith",
    "phoenix.jsonl": "openinference",
    "otel_genai.jsonl": "otel",
}
