"""JSON that Python's parser chokes on (deep nesting, huge numbers, lone surrogates) is a per-line problem
naming file, line, field and fix, exit 2, nothing written: never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.store import Store

GOOD = json.dumps(
    {
        "id": "c1",
        "messages": [
            {"role": "human", "content": "Hi?"},
            {"role": "ai", "content": "Hello.", "feedback": "good"},
        ],
    }
)
DEEP = '{"id": "c2", "extra": ' + "[" * 10_000 + "]" * 10_000 + ', "messages": []}'
HUGE = '{"id": "c3", "n": ' + "9" * 5_000 + ', "messages": []}'
SURROGATE = (
    '{"id": "c4", "messages": [{"role": "human", "content": "bad \\ud800 text"},'
    ' {"role": "ai", "content": "A.", "feedback": "good"}]}'
)
CASES = {
    "deep": (DEEP, None, "nested too deeply"),
    "huge-number": (HUGE, None, "longer than 4300 digits"),
    "lone-surrogate": (SURROGATE, "messages[0].content", "lone UTF-16 surrogate"),
}


@pytest.mark.parametrize("first", [False, True], ids=["second-line", "first-line"])
@pytest.mark.parametrize("kind", list(CASES))
def test_unparseable_json_is_a_problem_not_a_traceback(
    kind: str, first: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, field, words = CASES[kind]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([line, GOOD] if first else [GOOD, line]) + "\n", encoding="utf-8")
    db = tmp_path / "s.db"
    assert main(["ingest", str(log), "--db", str(db)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{log}:{1 if first else 2}:" in err and words in err and "Fix:" in err
    if field:
        assert f"field '{field}'" in err
    if db.exists():
        with Store.open(str(db)) as store:
            assert store.cases.list_sources() == [] and store.cases.count_cases() == 0  # nothing was written


def test_a_csv_cell_with_a_huge_number_in_its_json_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "rows.csv"
    log.write_text(
        "conversation_id,role,content,feedback,retrieved_ids\n"
        "c1,human,Hi?,,\n"
        f"c1,ai,Hello.,good,[{'9' * 5000}]\n",
        encoding="utf-8",
    )
    assert main(["ingest", str(log), "--db", str(tmp_path / "s.db")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{log}:3: field 'retrieved_ids'" in err and "longer than 4300 digits" in err
