"""`ragreplay export` (CSV, Parquet), the Python API's DataFrames and the notebook views (issue 16), on a small
store filled through the CLI with fake targets and the fake judge."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import ragreplay
from ragreplay.cli.app import main
from ragreplay.compare.stored import COMPARISON_TABLE
from ragreplay.core.run_summary import RunSummary
from ragreplay.errors import MissingExtraError
from ragreplay.replay.replay_run import summarize_run
from ragreplay.replay.result_table import RESULT_TABLE
from ragreplay.report.notebook import html_table
from ragreplay.store import Store

CONVERSATIONS = [
    ("c1", "How many leave days do I get?", '=HYPERLINK("http://x")', "good"),
    ("c2", "When is the bonus paid?", "The bonus is paid in March.", "bad"),
    ("c3", "Can I work from home?", "Yes, up to three days a week.", "good"),
]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("export")
    db = str(tmp / "s.db")
    log = tmp / "log<x>.jsonl"
    log.write_text(
        "".join(
            json.dumps(
                {
                    "id": cid,
                    "tags": {"dept": "hr", "lang": "en"},
                    "messages": [
                        {"role": "human", "content": q},
                        {"role": "ai", "content": a, "feedback": fb, "retrieved": [{"id": f"doc#{cid}"}]},
                    ],
                }
            )
            + "\n"
            for cid, q, a, fb in CONVERSATIONS
        ),
        encoding="utf-8",
    )
    summary = ragreplay.ingest_log(log, db=db)
    target = tmp / "t.json"
    target.write_text(
        json.dumps({"name": "<b>cand</b>", "target": {"kind": "fake", "default": "I don't know."}})
    )
    assert main(["run", "--target", str(target), "--judge", "fake:default", "--db", db]) == 0
    champion = tmp / "champ.json"
    champion.write_text(json.dumps({"name": "prod", "target": {"kind": "fake", "echo_old_answer": True}}))
    compare = ["compare", "--champion", str(champion), "--challenger", f"b={target}", "--cases", str(log)]
    assert main([*compare, "--judge", "fake:default", "--db", db, "--format", "json"]) == 0
    with Store.open(db) as store:
        (run,) = store.runs.list_runs()
        (comparison,) = store.comparisons.list_comparisons()
    return {"db": db, "run_id": run.id, "comparison_id": comparison.id, "ingest": summary, "tmp": tmp}


def test_csv_export_has_every_case_with_the_documented_columns(
    filled: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.csv"
    assert main(["export", filled["run_id"][:12], "--output", str(out), "--db", filled["db"]]) == 0
    assert f"exported 3 case(s) of run {filled['run_id']}" in capsys.readouterr().err
    with out.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == RESULT_TABLE.columns
        rows = {r["conversation_id"]: r for r in reader}
    assert set(rows) == {"c1", "c2", "c3"}
    c2 = rows["c2"]
    assert c2["query"] == "When is the bonus paid?" and c2["feedback"] == "bad"
    assert c2["new_answer"] == "I don't know." and c2["status"] == "done" and c2["error"] == ""
    assert json.loads(c2["tags"]) == {"dept": "hr", "lang": "en"} and json.loads(c2["old_chunk_ids"]) == [
        "doc#c2"
    ]
    assert c2["verdict"] in ("BAD_FIT", "BAD_NO_FIT") and c2["fit"] in ("FIT", "NO_FIT", "UNSCORABLE")
    assert c2["turn_index"] == "1" and c2["rewritten"] in ("true", "false")
    assert rows["c1"]["old_answer"] == '\'=HYPERLINK("http://x")'  # a spreadsheet shows it, never runs it
    assert not list(tmp_path.glob("*.tmp"))


def test_parquet_export_types_every_column_and_matches_the_csv(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    parquet = pytest.importorskip("pyarrow.parquet", reason="pyarrow (ragreplay[parquet]) is not installed")
    out = tmp_path / "run.parquet"
    assert (
        main(["export", filled["run_id"], "--format", "parquet", "-o", str(out), "--db", filled["db"]]) == 0
    )
    table = parquet.read_table(out)
    assert tuple(table.column_names) == RESULT_TABLE.columns
    types = {f.name: str(f.type) for f in table.schema}
    assert types["turn_index"] == "int64" and types["cost_usd"] == "double" and types["rewritten"] == "bool"
    assert types["query"] == "string" and types["error"] == "string"  # all empty, still text
    rows = {r["conversation_id"]: r for r in table.to_pylist()}
    assert rows["c1"]["old_answer"] == '=HYPERLINK("http://x")'  # the text as stored
    assert rows["c3"]["new_answer"] == "I don't know." and rows["c3"]["turn_index"] == 1


def test_parquet_without_pyarrow_names_the_extra_and_writes_nothing(
    filled: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    out = tmp_path / "run.parquet"
    assert (
        main(["export", filled["run_id"], "--format", "parquet", "-o", str(out), "--db", filled["db"]]) == 2
    )
    err = capsys.readouterr().err
    assert "Parquet export needs the optional package 'pyarrow'" in err
    assert "pip install 'ragreplay[parquet]'" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run_nothing", "-o", "x.csv"], "no run matches 'run_nothing'"),
        (["RUN", "-o", "x.json", "--format", "json"], "--format 'json': choose one of csv, parquet"),
        (["RUN", "-o", "."], "is a folder. Fix: give a file name"),
    ],
)
def test_export_mistakes_exit_2(
    filled: dict[str, Any], args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [filled["run_id"] if a == "RUN" else a for a in args]
    assert main(["export", *args, "--db", filled["db"]]) == 2
    assert message in capsys.readouterr().err


def test_dataframes_of_a_run_and_a_comparison(filled: dict[str, Any]) -> None:
    pytest.importorskip("pandas", reason="pandas (ragreplay[pandas]) is not installed")
    frame = ragreplay.run_dataframe(filled["run_id"], db=filled["db"])
    assert tuple(frame.columns) == RESULT_TABLE.columns and len(frame) == 3
    assert str(frame["turn_index"].dtype) == "Int64" and str(frame["cost_usd"].dtype) == "Float64"
    assert set(frame["conversation_id"]) == {"c1", "c2", "c3"}
    assert frame.loc[frame["conversation_id"] == "c1", "old_answer"].item() == '=HYPERLINK("http://x")'
    rows = ragreplay.comparison_dataframe(filled["comparison_id"], db=filled["db"])
    assert tuple(rows.columns) == COMPARISON_TABLE.columns and len(rows) == 3
    assert set(rows["challenger"]) == {"b"} and str(rows["consistent"].dtype) == "boolean"
    assert (rows["challenger_answer"] == "I don't know.").all()


def test_a_dataframe_without_pandas_names_the_extra(
    filled: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(
        MissingExtraError, match=r"to_dataframe\(\) needs .* pip install 'ragreplay\[pandas\]'"
    ):
        ragreplay.run_dataframe(filled["run_id"], db=filled["db"])


def test_notebook_views_keep_the_fields_and_escape_every_value(filled: dict[str, Any]) -> None:
    summary = ragreplay.summary(filled["run_id"], db=filled["db"])
    assert isinstance(summary, RunSummary)
    with Store.open(filled["db"]) as store:
        assert summary.model_dump() == summarize_run(store, filled["run_id"]).model_dump()
    html = summary._repr_html_()
    assert "&lt;b&gt;cand&lt;/b&gt;" in html and "<b>cand" not in html
    assert f"run {filled['run_id']}" in html and "users said" in html and "good maintenance" in html
    ingest_html = filled["ingest"]._repr_html_()
    assert "log&lt;x&gt;.jsonl" in ingest_html and "cases_by_feedback: good" in ingest_html
    assert "<x>" not in ingest_html


def test_html_table_escapes_caption_header_and_cells() -> None:
    html = html_table("<i>c</i>", ["<h>"], [["<script>alert(1)</script>", None, 'a"&']])
    assert "<script>" not in html and "<i>" not in html and "<h>" not in html
    assert "&lt;script&gt;" in html and "<td></td>" in html and "a&quot;&amp;" in html
