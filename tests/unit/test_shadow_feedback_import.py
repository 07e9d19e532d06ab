"""Reading exported live feedback: JSONL and CSV, labels and skips, timestamps, redaction, problems naming
file, line, field and fix, flat memory, and batched writes with their counts."""

from __future__ import annotations

import json
import re
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from builders import make_shadow_row
from files import jsonl, write
from ragreplay.core.shadow import ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback
from ragreplay.errors import ConfigError, InputError
from ragreplay.shadow.feedback_import import (
    FeedbackFile,
    ImportCounts,
    ImportOptions,
    parse_synonyms,
    write_feedback,
)
from ragreplay.store import Store

NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
GOOD, BAD = Feedback.GOOD, Feedback.BAD


def read(path: Path, **options: Any) -> tuple[ImportCounts, list[ShadowFeedback]]:
    source = FeedbackFile(path, ImportOptions(**options), now=NOW)
    counts = source.validate()
    return counts, list(source.items())


def problems(path: Path, **options: Any) -> InputError:
    with pytest.raises(InputError) as info:
        FeedbackFile(path, ImportOptions(**options), now=NOW).validate()
    return info.value


def where(err: InputError) -> list[tuple[int | None, str | None]]:
    return [(p.line, p.field) for p in err.problems]


# --- reading -------------------------------------------------------------------------------------------------


def test_jsonl_labels_skips_timestamps_and_comments(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "fb.jsonl",
        jsonl(
            {"request_id": "r1", "feedback": "good", "ts": "2026-10-01T09:00:00"},
            {"request_id": "r2", "feedback": "Thumbs-Down", "ts": "2026-10-01T11:00:00+02:00"},
            {"request_id": "r3", "feedback": None},
            {"request_id": "r4", "feedback": ""},
            {"request_id": "r5"},
            {"request_id": 6, "feedback": 1, "ts": 1790000000, "comment": "call +31 6 1234 5678 pls"},
            {"request_id": " r7 ", "feedback": False, "comment": ""},
        )
        + "\n",  # a blank line is not a record
    )
    counts, items = read(path)
    assert counts == ImportCounts(good=2, bad=2, skipped=3, default_ts=1)
    assert counts.labels == 4
    assert [(i.request_id, i.feedback) for i in items] == [
        ("r1", GOOD),
        ("r2", BAD),
        ("6", GOOD),
        ("r7", BAD),
    ]
    assert items[0].ts == datetime(2026, 10, 1, 9, 0, tzinfo=UTC)  # naive is UTC
    assert items[1].ts == datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    assert items[2].ts == datetime.fromtimestamp(1790000000, tz=UTC)
    assert items[3].ts == NOW  # no ts: the import time
    assert items[2].comment == "call [PHONE] pls"
    assert items[3].comment is None
    assert {i.source for i in items} == {"import"}


def test_comments_kept_as_is_without_redaction(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.jsonl", jsonl({"request_id": "r1", "feedback": "bad", "comment": "a@b.com"}))
    assert read(path)[1][0].comment == "[EMAIL]"
    assert read(path, redact=None)[1][0].comment == "a@b.com"


def test_custom_field_names_and_dotted_paths(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "export.jsonl",
        jsonl(
            {"meta": {"rid": "r1"}, "event": {"label": "meh", "at": "2026-10-01T09:00:00Z"}, "note": "x"},
            {"meta.rid": "r2", "event": {"label": "up"}},  # a key that contains the dot wins
        ),
    )
    counts, items = read(
        path,
        id_field="meta.rid",
        feedback_field="event.label",
        ts_field="event.at",
        comment_field="note",
        synonyms=parse_synonyms(["meh=bad"]),
    )
    assert counts == ImportCounts(good=1, bad=1, skipped=0, default_ts=1)
    assert [(i.request_id, i.feedback, i.comment) for i in items] == [("r1", BAD, "x"), ("r2", GOOD, None)]


def test_csv_with_ratings_and_empty_cells(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "fb.csv",
        "\ufeffrequest_id,feedback,ts,comment\n"
        "r1,5,2026-10-01T09:00:00Z,\n"
        'r2,2,1790000000,"too slow, and wrong"\n'
        "r3,,,\n"
        "\n"
        "r4,4,,ok\n",
    )
    counts, items = read(path, rating_threshold=4)
    assert counts == ImportCounts(good=2, bad=1, skipped=1, default_ts=1)
    assert [(i.request_id, i.feedback, i.comment) for i in items] == [
        ("r1", GOOD, None),
        ("r2", BAD, "too slow, and wrong"),
        ("r4", GOOD, "ok"),
    ]
    assert items[2].ts == NOW


def test_csv_without_ts_or_comment_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.csv", "request_id,feedback\nr1,up\nr2,down\n")
    counts, items = read(path)
    assert counts.default_ts == 2
    assert all(i.ts == NOW for i in items)


def test_tsv_and_unknown_extensions_by_content(tmp_path: Path) -> None:
    tsv = write(tmp_path, "fb.tsv", "request_id\tfeedback\nr1\tgood\n")
    assert read(tsv)[1][0].request_id == "r1"
    sniffed = write(tmp_path, "fb.log", jsonl({"request_id": "r2", "feedback": "bad"}))
    assert read(sniffed)[1][0].feedback == BAD


def test_parse_synonyms() -> None:
    assert parse_synonyms(["meh=bad", "Great=GOOD", "n/a=none", "a=b=good"]) == {
        "meh": BAD,
        "Great": GOOD,
        "n/a": None,
        "a=b": GOOD,
    }
    for bad in ("meh", "meh=so-so", "=bad"):
        with pytest.raises(ConfigError, match=re.escape("SPELLING=good|bad|none")):
            parse_synonyms([bad])


def test_synonym_for_no_feedback_is_a_skip(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.jsonl", jsonl({"request_id": "r1", "feedback": "n/a"}))
    counts, items = read(path, synonyms={"n/a": None})
    assert (counts.skipped, items) == (1, [])


# --- problems ------------------------------------------------------------------------------------------------


def test_every_bad_line_is_named_with_field_and_fix(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.jsonl",
        jsonl(
            {"request_id": "r1", "feedback": "good"},
            {"request_id": "r2", "feedback": "meh", "ts": "yesterday"},
            {"feedback": "good"},
        )
        + '{"request_id": "r4", "feedback": "good"\n'
        + jsonl(
            [1, 2],
            {"request_id": {"a": 1}, "feedback": 5, "comment": 3},
            {"request_id": "r7", "feedback": None, "ts": "never"},  # no label: nothing else is read
        ),
    )
    err = problems(path)
    assert where(err) == [
        (2, "feedback"),
        (2, "ts"),
        (3, "request_id"),
        (4, None),
        (5, None),
        (6, "feedback"),
        (6, "request_id"),
        (6, "comment"),
    ]
    text = str(err)
    assert "bad.jsonl:2: field 'feedback' value 'meh' is not a feedback label. Fix: " in text
    assert "--synonym meh=bad" in text
    assert "bad.jsonl:2: field 'ts' value 'yesterday' is not a timestamp. Fix: use ISO 8601" in text
    assert "bad.jsonl:3: field 'request_id' is missing. Fix: " in text and "--id-field" in text
    assert "bad.jsonl:4: invalid JSON" in text
    assert "bad.jsonl:5: expected a JSON object, got list. Fix: write one JSON object per line" in text
    assert (
        "field 'feedback' value 5 is not a feedback label. Fix: for ratings pass --rating-threshold" in text
    )
    assert 'value {"a": 1} is not a request id' in text
    assert "field 'comment' value 3 is not text" in text


def test_with_a_threshold_words_still_fail_and_the_fix_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.jsonl", jsonl({"request_id": "r1", "feedback": "meh"}))
    err = problems(path, rating_threshold=4)
    assert "ratings are numbers (>= 4 is good)" in str(err)
    assert "--synonym meh=bad" in str(err)


def test_problems_stop_after_twenty(tmp_path: Path) -> None:
    path = write(
        tmp_path, "bad.jsonl", jsonl(*({"request_id": f"r{i}", "feedback": "meh"} for i in range(50)))
    )
    err = problems(path)
    assert len(err.problems) == 20
    assert err.more >= 1
    assert "... and" in str(err)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.jsonl", "", "file is empty"),
        ("blank.jsonl", "\n\n", "file is empty"),
        ("empty.csv", "", "file is empty"),
        ("header.csv", "request_id,feedback\n", "file has a header but no rows"),
    ],
)
def test_empty_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    err = problems(write(tmp_path, name, text))
    assert [p.message for p in err.problems] == [message]
    assert err.problems[0].fix


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert "file not found" in str(problems(tmp_path / "nope.jsonl"))
    assert "is a directory" in str(problems(tmp_path))


def test_csv_missing_columns_are_named_with_the_flag(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.csv", "rid,label\nr1,good\n")
    err = problems(path)
    assert where(err) == [(1, "request_id"), (1, "feedback")]
    assert "--id-field COLUMN" in str(err) and "--feedback-field COLUMN" in str(err)
    assert "header: rid, label" in str(err)
    assert read(path, id_field="rid", feedback_field="label")[0].good == 1


def test_csv_ragged_row(tmp_path: Path) -> None:
    err = problems(write(tmp_path, "fb.csv", "request_id,feedback\nr1,good,extra\n"))
    assert where(err) == [(2, None)]
    assert "row has 3 cells but the header has 2" in str(err)


def test_a_feedback_field_no_line_has(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.jsonl", jsonl({"request_id": "r1", "rating": 5}))
    err = problems(path)
    assert where(err) == [(None, "feedback")]
    assert "no line has this field" in str(err) and "--feedback-field" in str(err)


def test_a_pretty_printed_json_array_gets_the_jq_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "fb.json", json.dumps([{"request_id": "r1", "feedback": "good"}], indent=2))
    err = problems(path)
    assert err.problems[0].line == 1
    assert "jq -c" in err.problems[0].fix


def test_invalid_utf8_is_a_problem(tmp_path: Path) -> None:
    err = problems(write(tmp_path, "fb.jsonl", b'{"request_id": "r1", "feedback": "caf\xe9"}\n'))
    assert "not valid UTF-8" in str(err)


# --- streaming and writing -----------------------------------------------------------------------------------


def test_validation_streams_in_flat_memory(tmp_path: Path) -> None:
    comment = "It said 25 leave days, my contract says 28; see the handbook, chapter 4."
    line = json.dumps({"request_id": "rID", "feedback": "good", "comment": comment}) + "\n"
    path = write(tmp_path, "big.jsonl", "".join(line.replace("ID", str(i)) for i in range(5_000)))
    size = path.stat().st_size
    source = FeedbackFile(path, now=NOW)
    tracemalloc.start()
    try:
        counts = source.validate()
        n = sum(1 for _ in source.items())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts.good == n == 5_000
    assert peak < size / 10, f"peak {peak} bytes for a {size}-byte file"


def _shadow_row(request_id: str) -> ShadowRow:
    return make_shadow_row(request_id=request_id, champion_answer="x", challenger_answer="x")


def test_write_in_batches_counts_shadowed_and_older_labels(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.shadow_rows.write_shadow_rows([_shadow_row("r1"), _shadow_row("r3")])
        store.shadow_feedback.write_shadow_feedback(
            [ShadowFeedback(request_id="r4", feedback=GOOD, ts=NOW + timedelta(days=1), source="api")]
        )
        items = [
            ShadowFeedback(request_id=f"r{i}", feedback=BAD, ts=NOW, source="import") for i in range(1, 6)
        ]
        counts = write_feedback(store, iter(items), batch=2)
        assert (counts.written, counts.shadowed, counts.older_than_stored) == (5, 2, 1)
        stored = store.shadow_feedback.shadow_feedback_for(f"r{i}" for i in range(1, 6))
        assert stored["r4"].source == "api"  # the newer live label stays
        assert {k for k, v in stored.items() if v.source == "import"} == {"r1", "r2", "r3", "r5"}
        again = write_feedback(store, iter(items), batch=2)
        assert again.older_than_stored == 1  # replaying changes nothing
        assert store.shadow_feedback.count_shadow_feedback() == (5, 2)
