"""`--format json` of `runs`, `sources`, `comparisons`, `shadow judge` and `ingest --output-format json`
(issue 16): one JSON document on stdout with the documented keys, parsed here; progress stays on stderr."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from builders import make_shadow_row
from ragreplay.cli.app import main
from ragreplay.core.shadow import ShadowAnswer
from ragreplay.store import Store

CONVERSATIONS = [
    ("c1", "How many leave days do I get?", "You get 25 leave days per year.", "good"),
    ("c2", "When is the bonus paid?", "The bonus is paid in March.", "bad"),
    ("c3", "Can I work from home?", "Yes, up to three days a week.", "good"),
]
RUN_KEYS = {
    "id", "created_at", "finished_at", "status", "n_cases", "done", "errors", "target", "target_version", "judge",
    "judge_prompt_version", "rewriter",
}  # fmt: skip
SOURCE_KEYS = {"id", "path", "format", "ingested_at", "n_conversations", "n_cases", "n_skipped"}
COMPARISON_KEYS = {
    "id", "created_at", "finished_at", "status", "n_cases", "done", "champion", "challengers", "judge",
    "judge_prompt_version", "order", "cases",
}  # fmt: skip


def _write_log(path: Path) -> Path:
    lines = [
        json.dumps(
            {
                "id": cid,
                "tags": {"department": "hr"},
                "messages": [{"role": "human", "content": q}, {"role": "ai", "content": a, "feedback": fb}],
            }
        )
        for cid, q, a, fb in CONVERSATIONS
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _target(path: Path, name: str, answer: str) -> Path:
    path.write_text(
        json.dumps({"name": name, "target": {"kind": "fake", "default": answer}}), encoding="utf-8"
    )
    return path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_ingest_runs_sources_and_comparisons_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    log = _write_log(tmp_path / "log.jsonl")
    dry = _json(capsys, ["ingest", str(log), "--db", db, "--dry-run", "--output-format", "json"])
    assert dry["dry_run"] is True and dry["written"] is False and dry["cases"] == 3
    summary = _json(capsys, ["ingest", str(log), "--db", db, "--output-format", "json"])
    assert summary["written"] is True and summary["conversations"] == 3 and summary["cases"] == 3
    assert summary["cases_by_feedback"] == {"good": 2, "bad": 1} and summary["format"] == "canonical"
    again = _json(capsys, ["ingest", str(log), "--db", db, "--output-format", "json"])
    assert again["already_ingested"] is True and again["source_id"] == summary["source_id"]

    (source,) = _json(capsys, ["sources", "--db", db, "--format", "json"])
    assert set(source) == SOURCE_KEYS
    assert source["id"] == summary["source_id"] and source["n_cases"] == 3 and source["format"] == "canonical"
    datetime.fromisoformat(source["ingested_at"])

    assert _json(capsys, ["runs", "--db", db, "--format", "json"]) == []
    target = _target(tmp_path / "t.json", "cand", "You get 25 leave days per year.")
    assert main(["run", "--target", str(target), "--judge", "fake:default", "--db", db]) == 0
    (run,) = _json(capsys, ["runs", "--db", db, "--format", "json"])
    assert set(run) == RUN_KEYS
    assert (run["status"], run["n_cases"], run["done"], run["errors"]) == ("done", 3, 3, 0)
    assert run["target"] == "cand" and run["judge"] == "fake:default"
    assert datetime.fromisoformat(run["finished_at"]) >= datetime.fromisoformat(run["created_at"])

    champion = _target(tmp_path / "champ.json", "prod", "You get 25 leave days per year.")
    challenger = _target(tmp_path / "chal.json", "new", "I don't know.")
    compare = ["compare", "--champion", str(champion), "--challenger", f"b={challenger}", "--cases", str(log)]
    assert main([*compare, "--judge", "fake:default", "--db", db, "--format", "json"]) == 0
    (comparison,) = _json(capsys, ["comparisons", "--db", db, "--format", "json"])
    assert set(comparison) == COMPARISON_KEYS
    assert (comparison["champion"], comparison["challengers"], comparison["done"]) == ("prod", ["b"], 3)
    assert comparison["status"] == "done" and comparison["order"] == "both"


def test_shadow_judge_summary_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    now = datetime.now(UTC)
    rows = [
        make_shadow_row(
            id=f"r{n}",
            ts=now - timedelta(hours=1),
            request_id=f"req-{n}",
            query="how many leave days do employees get",
            challenger="b",
            champion_answer=ShadowAnswer(text="employees get 25 leave days", latency_ms=100.0),
            challenger_answer=ShadowAnswer(text=text, latency_ms=120.0, error=error),
        )
        for n, (text, error) in enumerate([("employees get 25 leave days", None), ("", "TimeoutError: 30 s")])
    ]
    with Store.open(db) as store:
        store.shadow_rows.write_shadow_rows(rows)
    argv = ["shadow", "judge", "--db", db, "--judge", "fake:default", "--format", "json"]
    first = _json(capsys, argv)
    assert first == {
        "since": "7d", "judged": 2, "errors": 1, "unscorable": 0, "cost_usd": 0.0, "unpriced_calls": 0,
        "unjudged_left": 0,
    }  # fmt: skip
    assert _json(capsys, argv)["judged"] == 0  # each row is judged once


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "--format", "yaml"], "--format 'yaml': choose one of text, json"),
        (["ingest", "x.jsonl", "--output-format", "csv"], "--output-format 'csv': choose one of text, json"),
        (
            ["ingest", "x.jsonl", "--format", "json"],
            "Fix: for the summary as JSON, write --output-format json",
        ),
    ],
)
def test_an_unknown_output_format_is_a_mistake(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
