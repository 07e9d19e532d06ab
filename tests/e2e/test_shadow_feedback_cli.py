"""`ragreplay shadow feedback FILE` in-process on SQLite and PostgreSQL: the summary line, what is stored,
re-imports, live labels that are newer, dry runs and bad files that write nothing, stdin."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback
from ragreplay.store import Store

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def _lines(path: Path, objects: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def _seed(url: str, shadowed: list[str], live: list[ShadowFeedback] | None = None) -> None:
    side = ShadowAnswer(text="x")
    with Store.open(url) as store:
        store.shadow_rows.write_shadow_rows(
            [
                ShadowRow(
                    request_id=rid, query="q", challenger=c, champion_answer=side, challenger_answer=side
                )
                for rid in shadowed
                for c in ("b", "c")
            ]
        )
        store.shadow_feedback.write_shadow_feedback(live or [])


def _stored(url: str, ids: list[str]) -> dict[str, ShadowFeedback]:
    with Store.open(url) as store:
        return store.shadow_feedback.shadow_feedback_for(ids)


def test_import_summary_store_and_reimport(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(
        store_url,
        shadowed=["r1", "r2", "r9"],
        live=[ShadowFeedback(request_id="r2", feedback=Feedback.GOOD, ts=T0 + timedelta(days=1))],
    )
    path = _lines(
        tmp_path / "feedback.jsonl",
        [
            {"request_id": "r1", "feedback": "good", "ts": "2026-10-01T09:00:00Z", "comment": "mail x@y.com"},
            {"request_id": "r2", "feedback": "bad", "ts": "2026-10-01T10:00:00Z"},  # the live label is newer
            {"request_id": "r3", "feedback": "meh"},
            {"request_id": "r4", "feedback": None},
        ],
    )
    args = ["shadow", "feedback", str(path), "--db", store_url, "--synonym", "meh=bad"]
    assert main(args) == 0
    err = capsys.readouterr().err
    now = re.search(r"got the import time (\S+)$", err.strip())
    assert now is not None
    assert err.strip() == (
        f"read 3 label(s) (1 good, 2 bad) from {path}: 2 new, 0 already imported; 1 skipped (no label); "
        "2 on requests with a shadow row; "
        "1 older than the label already stored for their request (not kept); "
        f"1 without a ts got the import time {now.group(1)}"
    )
    stored = _stored(store_url, ["r1", "r2", "r3", "r4"])
    assert {k: (v.feedback, v.source) for k, v in stored.items()} == {
        "r1": (Feedback.GOOD, "import"),
        "r2": (Feedback.GOOD, "api"),
        "r3": (Feedback.BAD, "import"),
    }
    assert stored["r1"].comment == "mail [EMAIL]"
    imported_at = datetime.fromisoformat(now.group(1))
    assert abs(stored["r3"].ts - imported_at) < timedelta(seconds=1)

    # Importing the file again: the labels with a ts change nothing; r3 gets the new import time.
    assert main(args) == 0
    assert (
        f"read 3 label(s) (1 good, 2 bad) from {path}: 1 new, 1 already imported;" in capsys.readouterr().err
    )
    with Store.open(store_url) as store:
        assert store.shadow_feedback.count_shadow_feedback() == (3, 2)
        assert store.shadow_feedback.shadow_feedback_for(["r1"])["r1"].ts == T0


def test_many_lines_in_batches(tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(store_url, shadowed=["r0", "r1500"])
    path = tmp_path / "many.csv"
    rows = [f"r{i},{1 + i % 5},{1790000000 + i}" for i in range(2500)]
    path.write_text("request_id,rating,ts\n" + "\n".join(rows) + "\n", encoding="utf-8")
    args = ["shadow", "feedback", str(path), "--db", store_url, "--feedback-field", "rating"]
    assert main([*args, "--rating-threshold", "4"]) == 0
    err = capsys.readouterr().err
    assert "read 2500 label(s) (1000 good, 1500 bad)" in err
    assert "0 skipped (no label); 2 on requests with a shadow row" in err
    with Store.open(store_url) as store:
        assert store.shadow_feedback.count_shadow_feedback() == (2500, 2)


def test_bad_file_writes_nothing_and_names_line_field_and_fix(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(store_url, shadowed=["r1"])
    path = _lines(
        tmp_path / "broken.jsonl",
        [{"request_id": f"r{i}", "feedback": "good"} for i in range(3000)]
        + [{"request_id": "rx", "feedback": "meh"}, {"feedback": "bad"}, {"request_id": "ry", "ts": "soon"}],
    )
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"request_id": "rz", "feedback": "good", "ts": "tomorrow"}\n{"request_id": \n')
    assert main(["shadow", "feedback", str(path), "--db", store_url]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    flat = " ".join(err.split())
    assert f"{path}:3001: field 'feedback' value 'meh' is not a feedback label. Fix:" in flat
    assert "--synonym meh=bad" in flat
    assert f"{path}:3002: field 'request_id' is missing. Fix:" in flat
    assert f"{path}:3004: field 'ts' value 'tomorrow' is not a timestamp. Fix:" in flat
    assert f"{path}:3005: invalid JSON" in flat
    assert ":3003:" not in flat  # no label on that line: skipped, its ts is not read
    with Store.open(store_url) as store:
        assert store.shadow_feedback.count_shadow_feedback() == (0, 0)


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("missing.jsonl", None, "file not found"),
        ("empty.jsonl", "", "file is empty"),
        ("fb.csv", "id,feedback\n1,good\n", "field 'request_id' column is missing (header: id, feedback)"),
    ],
)
def test_unreadable_files_exit_2_and_create_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str | None, words: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    db = tmp_path / "store.db"
    assert main(["shadow", "feedback", str(path), "--db", str(db)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: {path}" in err and words in err and "Fix:" in err
    assert "Traceback" not in err
    assert not db.exists()


def test_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _lines(tmp_path / "fb.jsonl", [{"request_id": "r1", "feedback": "up"}, {"request_id": "r2"}])
    db = tmp_path / "store.db"
    assert main(["shadow", "feedback", str(path), "--db", str(db), "--dry-run"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"would import 1 label(s) (1 good, 0 bad) from {path}; 1 skipped (no label); ")
    assert err.endswith("; dry run: nothing written")
    assert not db.exists()


def test_bad_flags_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _lines(tmp_path / "fb.jsonl", [{"request_id": "r1", "feedback": "up"}])
    assert main(["shadow", "feedback", str(path), "--synonym", "meh"]) == 2
    assert "SPELLING=good|bad|none" in capsys.readouterr().err


def test_stdin_jsonl_and_no_redact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.dumps({"request_id": "r1", "feedback": "bad", "ts": 1790000000, "comment": "a@b.com"}) + "\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data.encode() + b"{oops\n")))
    db = tmp_path / "store.db"
    assert main(["shadow", "feedback", "-", "--db", str(db)]) == 2
    assert "<stdin>:2: invalid JSON" in capsys.readouterr().err
    assert not db.exists()

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    assert main(["shadow", "feedback", "-", "--db", str(db), "--no-redact"]) == 0
    assert (
        "read 1 label(s) (0 good, 1 bad) from <stdin>: 1 new, 0 already imported" in capsys.readouterr().err
    )
    stored = _stored(f"sqlite:///{db}", ["r1"])["r1"]
    assert (stored.comment, stored.source) == ("a@b.com", "import")


def test_own_redactor_for_comments_and_a_bad_one_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "acme_privacy.py").write_text(
        "def scrub(text):\n    return text.replace('Jansen', '[NAME]')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _lines(
        tmp_path / "fb.jsonl", [{"request_id": "r1", "feedback": "bad", "comment": "Jansen, a@b.com"}]
    )
    db = tmp_path / "store.db"
    assert main(["shadow", "feedback", str(path), "--db", str(db), "--redact", "acme_privacy:scrub"]) == 0
    assert _stored(f"sqlite:///{db}", ["r1"])["r1"].comment == "[NAME], a@b.com"  # the user's hook alone
    capsys.readouterr()
    assert main(["shadow", "feedback", str(path), "--db", str(db), "--redact", "acme_privacy:nope"]) == 2
    assert "has no function 'nope'" in " ".join(capsys.readouterr().err.split())


def test_importing_the_same_file_again_says_nothing_new(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "thumbs.jsonl"
    path.write_text(
        '{"request_id": "a", "feedback": "good", "ts": 1790000000}\n'
        '{"request_id": "b", "feedback": "bad", "ts": 1790000001}\n',
        encoding="utf-8",
    )
    args = ["shadow", "feedback", str(path), "--db", store_url]
    assert main(args) == 0
    assert (
        f"read 2 label(s) (1 good, 1 bad) from {path}: 2 new, 0 already imported" in capsys.readouterr().err
    )
    assert main(args) == 0
    assert (
        f"read 2 label(s) (1 good, 1 bad) from {path}: 0 new, 2 already imported" in capsys.readouterr().err
    )
