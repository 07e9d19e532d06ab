"""`ingest --dry-run` shows what would be read before anything is written: the first turns with the field each
value came from, and every record read or left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.cli.app import main
from ragreplay.ingest import FieldMapping, validate_file

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
TRACES = Path(__file__).parent.parent / "fixtures" / "traces"


def test_canonical_preview_values_and_origins() -> None:
    summary = validate_file(LOGS / "canonical_good.jsonl")
    first, second = summary.preview[:2]
    assert (first.conversation_id, first.turn) == ("conv_001", 1)
    assert (first.question, first.answer) == ("Who is Lisa?", "Lisa is the head of HR.")
    assert (first.chunk_ids, first.latency_ms, first.feedback) == (["doc12#3"], 840, "good")
    assert first.tokens == {"input": 900, "output": 60}
    assert first.origin["question"] == "messages[].content (role human)"
    assert (second.question, second.answer, second.feedback) == (
        "And her phone number?",
        "I do not know.",
        "bad",
    )
    assert second.history_messages == 2
    assert len(summary.preview) <= 5
    assert summary.records_read == {"line (a conversation)": summary.conversations}


def test_trace_preview_names_the_feedback_record() -> None:
    summary = validate_file(TRACES / "langfuse.jsonl", mapping=FieldMapping(rating_threshold=4))
    first = summary.preview[0]
    assert first.question == "How many vacation days do I get?"
    assert first.origin["feedback"] == "score at langfuse.jsonl:17, field stringValue"


def test_cli_dry_run_shows_turns_as_text_never_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = {
        "id": "c1",
        "messages": [
            {"role": "human", "content": "[b]x[/b]?"},
            {"role": "ai", "content": "[link=u]y[/link]", "feedback": "good"},
        ],
    }
    log = write(tmp_path, "log.jsonl", jsonl(conversation))
    assert main(["ingest", str(log), "--db", str(tmp_path / "r.db"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[b]x[/b]?" in out
    assert "[link=u]y[/link]" in out
    assert "messages[].content (role ai)" in out
    assert "records read and used" in out
    assert not (tmp_path / "r.db").exists()


def test_cli_dry_run_json_has_the_preview(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "openai.jsonl"
    shutil.copy(LOGS / "openai_good.jsonl", log)
    args = ["ingest", str(log), "--db", str(tmp_path / "r.db"), "--dry-run", "--output-format", "json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["preview"], summary
    assert {"question", "answer", "origin", "chunk_ids", "feedback"} <= summary["preview"][0].keys()
    assert summary["records_read"] == {"line (a conversation)": summary["conversations"]}
    assert summary["records_ignored"] == {}


def test_a_failed_ingest_leaves_no_empty_store_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(
        tmp_path, "bad.jsonl", '{"id": "c1", "messages": [{"role": "human", "content": "hi"}]}\n{oops\n'
    )
    db = tmp_path / "new.db"
    assert main(["ingest", str(bad), "--db", str(db)]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    assert not db.exists() and not list(tmp_path.glob("new.db*"))
    good = LOGS / "canonical_good.jsonl"
    assert main(["ingest", str(good), "--db", str(db)]) == 0
    assert main(["ingest", str(bad), "--db", str(db)]) == 2  # an existing store stays, with what it held
    assert db.exists()
