"""`ragreplay golden` end to end on SQLite: import JSONL and CSV, re-import is a no-op, export in both formats
reads back as the same content, list and show, bad files named by file, line, field and fix (exit 2, nothing
written), and build from a regression set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.store import Store

ROWS: list[dict[str, object]] = [
    {
        "id": "q1",
        "question": "When is the bonus paid?",
        "reference": "With the April salary of the following year.",
        "contexts": [{"id": "bonus-2025-en#2", "text": "The bonus is paid with the April salary."}],
        "judgments": {"bonus-2025-en#2": 2},
        "tags": ["kind=single_hop", "lang=en"],
    },
    {
        "id": "q2",
        "question": "And are interns eligible for it?",
        "reference": "No, interns and agency staff are not eligible.",
        "tags": {"kind": "follow_up"},
        "history": [
            {"role": "human", "content": "What is the bonus target?"},
            {"role": "ai", "content": "10% of annual base salary."},
        ],
        "answer": "Yes.",
    },
]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _versions(db: str) -> list[str]:
    with Store.open(db) as store:
        return [r.ref for r in store.golden.list_versions()]


def test_import_export_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "g.db")
    data = _jsonl(tmp_path / "golden.jsonl", ROWS)
    assert main(["golden", "import", str(data), "--name", "hr", "--db", db]) == 0
    err = capsys.readouterr().err
    assert "saved golden set hr@v1: 2 rows" in err and "1 row(s) gave an answer" in err
    assert main(["golden", "import", str(data), "--name", "hr", "--db", db]) == 0
    assert "already holds these 2 rows: no new version" in capsys.readouterr().err
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"export.{fmt}"
        assert main(["golden", "export", "hr@v1", "--format", fmt, "--output", str(out), "--db", db]) == 0
        assert main(["golden", "import", str(out), "--name", "hr", "--db", db]) == 0
        assert "no new version" in capsys.readouterr().err, fmt
    assert _versions(db) == ["hr@v1"]
    assert main(["golden", "export", "hr", "--db", db]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert exported[1]["tags"] == ["kind=follow_up"] and "answer" not in exported[1]
    assert exported[1]["history"][1] == {"role": "ai", "content": "10% of annual base salary."}
    _jsonl(tmp_path / "v2.jsonl", ROWS[:1])
    assert main(["golden", "import", str(tmp_path / "v2.jsonl"), "--name", "hr", "--db", db]) == 0
    assert main(["golden", "list", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert listed.index("hr@v2") < listed.index("hr@v1") and "from import" in listed
    assert main(["golden", "show", "hr@v1", "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "q1  Q: When is the bonus paid?" in shown and "chunks: bonus-2025-en#2" in shown
    assert main(["golden", "show", "hr@3", "--db", db]) == 2
    assert "no golden set 'hr@3'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "bad.jsonl",
            '{"id": "q1", "question": "Q?"}\n{"id": "q2", "questoin": "Q?"}\n',
            "bad.jsonl:2: field 'questoin' is not a field of a golden row",
        ),
        (
            "dup.jsonl",
            '{"id": "q1", "question": "Q?"}\n{"id": "q1", "question": "R?"}\n',
            "dup.jsonl:2: field 'id' 'q1' is also the id of line 1",
        ),
        (
            "turns.jsonl",
            '{"id": "q1", "question": "Q?", "history": [{"role": "bot", "content": "x"}]}\n',
            "turns.jsonl:1: field 'history[0]' must be {role: human|ai",
        ),
        (
            "cols.csv",
            "id,question,answr\nq1,Q?,x\n",
            "cols.csv:1: field 'answr' is not a column of a golden set",
        ),
        (
            "cell.csv",
            'id,question,judgments\nq1,Q?,{"a": 1}\nq2,"two\nlines",{oops}\n',
            "cell.csv:3: field 'judgments' is not valid JSON",
        ),
        ("empty.csv", "id,question\n", "empty.csv: holds no rows"),
    ],
)
def test_a_bad_file_names_line_field_and_fix_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, expected: str
) -> None:
    db = str(tmp_path / "g.db")
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert main(["golden", "import", str(tmp_path / name), "--name", "hr", "--db", db]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Fix:" in err and "Traceback" not in err
    assert _versions(db) == []


def test_a_bad_name_or_format_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _jsonl(tmp_path / "golden.jsonl", ROWS)
    db = str(tmp_path / "g.db")
    assert main(["golden", "import", str(data), "--name", "no spaces", "--db", db]) == 2
    assert "is not a golden set name" in capsys.readouterr().err
    assert main(["golden", "import", str(data), "--name", "hr", "--db", db]) == 0
    assert main(["golden", "export", "hr", "--format", "xml", "--db", db]) == 2
    assert main(["golden", "build", "--name", "x", "--db", db]) == 2
    assert "exactly one of --from-reviews and --from-regset" in capsys.readouterr().err
