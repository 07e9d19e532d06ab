"""Malformed logs through the CLI: the error names file, line and field with a fix, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.store import Store

GOOD = {
    "id": "c1",
    "messages": [
        {"role": "human", "content": "Hi?"},
        {"role": "ai", "content": "Hello.", "feedback": "good"},
    ],
}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _bad(conv_id: str, **changes: object) -> str:
    conv = json.loads(json.dumps(GOOD))
    conv["id"] = conv_id
    for field, value in changes.items():
        index, key = field.split("__")
        if value is None:
            del conv["messages"][int(index)][key]
        else:
            conv["messages"][int(index)][key] = value
    return json.dumps(conv)


@pytest.mark.parametrize(
    "line,field,words",
    [
        ('{"id": "c9", "messages": [', None, "JSON"),
        (_bad("c9", **{"0__role": None}), "messages[0].role", "role"),
        (_bad("c9", **{"1__role": "wizard"}), "messages[1].role", "role"),
        (_bad("c9", **{"1__feedback": "meh"}), "messages[1].feedback", "feedback"),
    ],
)
def test_malformed_log_names_file_line_field_and_writes_nothing(
    tmp_path: Path,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    line: str,
    field: str | None,
    words: str,
) -> None:
    log = _write(tmp_path / "broken.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "id": "c2"}), line])
    assert main(["ingest", str(log), "--db", store_url]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "broken.jsonl:3" in err
    if field:
        assert field in err
    assert words.lower() in err.lower()
    assert "Fix" in err or "fix" in err
    with Store.open(store_url) as store:
        assert store.cases.list_sources() == []
        assert store.cases.count_cases() == 0


def test_ai_message_first_is_counted_as_skipped_not_lost(tmp_path: Path, store_url: str) -> None:
    first = {
        "id": "c3",
        "messages": [{"role": "ai", "content": "Welcome!", "feedback": "good"}, *GOOD["messages"]],
    }
    log = _write(tmp_path / "ai_first.jsonl", [json.dumps(first)])
    assert main(["ingest", str(log), "--db", store_url]) == 0
    with Store.open(store_url) as store:
        assert store.cases.count_cases() == 1
        assert store.cases.skip_counts() == {"ai_without_preceding_human": 1}


def test_dry_run_validates_without_writing(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(tmp_path / "ok.jsonl", [json.dumps(GOOD)])
    assert main(["ingest", str(log), "--db", store_url, "--dry-run"]) == 0
    assert "nothing written" in capsys.readouterr().out
    with Store.open(store_url) as store:
        assert store.cases.count_cases() == 0
