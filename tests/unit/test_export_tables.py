"""Exports as users download them besides JSON Lines: Parquet and CSV tables, and folders of export files."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.errors import InputError
from ragreplay.ingest import FieldMapping, detect_format, iter_conversations, source_id_for, validate_file
from ragreplay.ingest.problems import ProblemLog
from ragreplay.ingest.table_records import table_records

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
THRESHOLD = FieldMapping(rating_threshold=4)  # the fixture's 1-5 rating


def _rows(path: Path) -> list[tuple[int | None, dict[str, object]]]:
    log = ProblemLog(str(path))
    rows = [(rec.line, obj) for rec, obj in table_records(path, log)]
    log.raise_if_any()
    return rows


def test_parquet_rows_read_as_json_would_hold_them(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    run_id = uuid.UUID("5f0c0000-0000-4000-8000-000000000005")
    table = pa.table(
        {
            "id": pa.array([run_id.bytes, run_id.bytes], type=pa.binary(16)),
            "run_type": ["chain", "llm"],
            "start_time": pa.array(
                [datetime(2026, 3, 2, 9, 0, tzinfo=UTC), None], type=pa.timestamp("us", tz="UTC")
            ),
            "inputs": [{"question": "How many days?"}, {"question": None}],
            "tags": [["beta"], []],
        }
    )
    path = tmp_path / "runs.parquet"
    parquet.write_table(table, path)
    rows = _rows(path)
    assert [line for line, _ in rows] == [1, 2]
    first = rows[0][1]
    assert first["id"] == str(run_id)
    assert first["start_time"] == "2026-03-02T09:00:00+00:00"
    assert first["inputs"] == {"question": "How many days?"}
    assert first["tags"] == ["beta"]
    assert rows[1][1]["start_time"] is None
    assert detect_format(path) == "langsmith"


def test_csv_cells_json_python_literals_and_blanks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "spans.csv",
        "context.span_id,span_kind,attributes.input.value,attributes.llm.input_messages,parent_id\n"
        'a1,LLM,"{""question"": ""Hi""}","[{\'message.role\': \'user\', \'message.content\': \'Hi\'}]",\n'
        'a2,RETRIEVER,"two\nlines",[not a literal,a1\n',
    )
    rows = _rows(path)
    assert [line for line, _ in rows] == [2, 3]
    assert rows[0][1]["attributes.input.value"] == {"question": "Hi"}
    assert rows[0][1]["attributes.llm.input_messages"] == [{"message.role": "user", "message.content": "Hi"}]
    assert rows[0][1]["parent_id"] is None
    assert rows[1][1]["attributes.input.value"] == "two\nlines"
    assert rows[1][1]["attributes.llm.input_messages"] == "[not a literal"
    assert detect_format(path) == "openinference"


def test_a_csv_with_a_conversation_id_column_stays_flat(tmp_path: Path) -> None:
    path = write(tmp_path, "log.csv", "conversation_id,role,content\nc1,human,hi\n")
    assert detect_format(path) == "flat"


def _split_into_folder(tmp_path: Path, source: Path, at: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    folder = tmp_path / "export"
    (folder / "part-b").mkdir(parents=True)
    (folder / "part-a.jsonl").write_text("".join(lines[:at]), encoding="utf-8")
    (folder / "part-b" / "rest.jsonl").write_text("".join(lines[at:]), encoding="utf-8")
    (folder / ".hidden.jsonl").write_text("not json\n", encoding="utf-8")
    (folder / "notes.txt").write_text("not an export file\n", encoding="utf-8")
    return folder


def test_a_folder_reads_as_its_files_concatenated(tmp_path: Path) -> None:
    source = TRACES / "langfuse.jsonl"
    folder = _split_into_folder(tmp_path, source, 11)
    assert detect_format(folder) == "langfuse"
    whole = [conv for _, conv in iter_conversations(source, mapping=THRESHOLD)]
    parts = [conv for _, conv in iter_conversations(folder, mapping=THRESHOLD)]
    assert parts == whole
    assert validate_file(folder, mapping=THRESHOLD).cases == validate_file(source, mapping=THRESHOLD).cases


def test_a_folder_problem_names_the_file_and_its_own_line(tmp_path: Path) -> None:
    folder = _split_into_folder(tmp_path, TRACES / "langfuse.jsonl", 11)
    rest = folder / "part-b" / "rest.jsonl"
    lines = rest.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(2, "{broken\n")
    rest.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(iter_conversations(folder, "langfuse", THRESHOLD))
    [problem] = caught.value.problems
    assert (problem.file, problem.line) == (str(rest), 3)


def test_a_folder_vote_on_a_missing_trace_names_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    write(folder, "a_traces.jsonl", jsonl({"id": "t1", "input": "Hi?", "output": "Hello."}))
    score = {"traceId": "t9", "name": "user_feedback", "dataType": "NUMERIC", "value": 1}
    write(folder, "b_scores.jsonl", jsonl({"traceId": "t1", "name": "note", "value": 1}, score))
    with pytest.raises(InputError) as caught:
        list(iter_conversations(folder, "langfuse"))
    [problem] = caught.value.problems
    assert (problem.file, problem.line) == (str(folder / "b_scores.jsonl"), 2)


def test_a_folder_source_id_follows_its_files(tmp_path: Path) -> None:
    folder = _split_into_folder(tmp_path, TRACES / "langfuse.jsonl", 11)
    first = source_id_for(folder)
    assert source_id_for(folder) == first
    shutil.copy(folder / "part-a.jsonl", folder / "part-c.jsonl")
    assert source_id_for(folder) != first


def test_a_folder_is_refused_for_a_streamed_format(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write(folder, "a.jsonl", jsonl({"id": "c1", "messages": [{"role": "human", "content": "hi"}]}))
    with pytest.raises(InputError, match="a folder is read only as a tracing tool's export"):
        validate_file(folder, "canonical")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="the folder holds no export file"):
        validate_file(empty)


def test_an_unknown_record_says_what_every_format_expects(tmp_path: Path) -> None:
    path = write(tmp_path, "mystery.jsonl", json.dumps({"event": "chat", "payload": {}}) + "\n")
    with pytest.raises(InputError) as caught:
        detect_format(path)
    message = str(caught.value)
    assert "mystery.jsonl:1" in message
    assert "Its keys: event, payload" in message
    for fmt in ("canonical", "flat", "openai", "langfuse", "langsmith", "openinference", "otel"):
        assert f"{fmt}: " in message
