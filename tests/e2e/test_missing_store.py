"""A mistyped --db for a command that reads is refused with the path and the fix; nothing is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.cli.app import main

READERS = [
    ["report", "run_x"],
    ["runs"],
    ["sources"],
    ["comparisons"],
    ["compare-report", "cmp_x"],
    ["triage", "run_x", "--judge", "local"],
    ["gates"],
    ["regset", "list"],
    ["shadow", "report"],
    ["shadow", "judge", "--judge", "local"],
]


@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[:2]))
def test_a_reading_command_refuses_a_store_that_does_not_exist(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "ragreplay.db"
    assert main([*command, "--db", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"no store at {missing}" in err.replace("\n", "")
    assert "Fix:" in err and "ragreplay ingest" in err
    assert not missing.parent.exists()  # neither the store nor its folder was created


def test_ingest_creates_the_store_and_then_readers_open_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "ragreplay.db"
    log = write(
        tmp_path,
        "log.jsonl",
        jsonl(
            {
                "id": "c1",
                "messages": [
                    {"role": "human", "content": "Who is Lisa?"},
                    {"role": "ai", "content": "Lisa is the HR lead.", "feedback": "good"},
                ],
            }
        ),
    )
    assert main(["ingest", str(log), "--db", str(db)]) == 0
    assert db.exists()
    assert main(["sources", "--db", str(db)]) == 0
    assert "log.jsonl" in capsys.readouterr().out


def test_a_dry_run_after_an_ingest_says_already_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ragreplay.db"
    log = write(
        tmp_path,
        "log.jsonl",
        jsonl(
            {
                "id": "c1",
                "messages": [
                    {"role": "human", "content": "Who is Lisa?"},
                    {"role": "ai", "content": "Lisa is the HR lead.", "feedback": "good"},
                ],
            }
        ),
    )
    assert main(["ingest", str(log), "--dry-run", "--db", str(db)]) == 0
    assert not db.exists()  # a dry run creates no store
    assert "already_ingested │ False" in " ".join(capsys.readouterr().out.split())
    assert main(["ingest", str(log), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["ingest", str(log), "--dry-run", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "already_ingested │ True" in out and "already ingested as source" in out
