"""End to end: ingest a log of 60 conversations, replay it against a candidate's log, judge, report.

The sample's ground truth fixes every case's outcome, so the counts, rates and intervals are asserted exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from ragreplay.cli.app import main
from ragreplay.demo.sample import build_sample
from ragreplay.store import Store

TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


@pytest.fixture
def workspace(tmp_path: Path, store_url: str) -> tuple[Path, str]:
    sample = build_sample(60)
    sample.write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    return tmp_path, store_url


def _wilson(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return ci.low, ci.high


def test_full_replay_exact_counts(workspace: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    folder, db = workspace
    sample = build_sample(60)
    assert main(["ingest", str(folder / "production.jsonl"), "--db", db]) == 0
    assert main(["ingest", str(folder / "production.jsonl"), "--db", db]) == 0  # no-op
    assert "already ingested" in capsys.readouterr().out
    code = main(["run", "--target", str(folder / "candidate.yaml"), "--judge", "fake:default", "--db", db])
    assert code == 0
    capsys.readouterr()
    assert main(["runs", "--db", db]) == 0
    listing = capsys.readouterr().out
    with Store.open(db) as store:
        (run,) = store.runs.list_runs()
    run_id = run.id
    assert run_id in listing and "done" in listing
    assert main(["report", run_id, "--format", "json", "--db", db]) == 0
    report = json.loads(capsys.readouterr().out)

    expected = sample.outcome_counts()
    assert expected == {
        "GOOD_FIT": 38,
        "GOOD_NO_FIT": 11,
        "BAD_FIT": 18,
        "BAD_NO_FIT": 28,
        "UNSCORABLE": 5,
        "ERROR": 8,
    }
    counts = report["rates"]["counts"]
    for verdict in ("GOOD_FIT", "GOOD_NO_FIT", "BAD_FIT", "BAD_NO_FIT"):
        assert counts[verdict] == expected[verdict], verdict
    assert report["n_cases"] == len(sample.expected) == 108
    assert report["n_unscorable"] == 5
    assert report["n_errors"] == 8
    assert report["n_pending"] == 0
    assert {k: v for k, v in report["skipped"].items()} == {str(k): v for k, v in sample.skips.items()}

    good = report["rates"]["good_maintenance"]
    assert (good["k"], good["n"]) == (38, 49)
    assert good["value"] == pytest.approx(38 / 49)
    assert (good["low"], good["high"]) == pytest.approx(_wilson(38, 49))
    bad_change = report["rates"]["bad_change"]
    assert (bad_change["k"], bad_change["n"]) == (28, 46)
    assert (bad_change["low"], bad_change["high"]) == pytest.approx(_wilson(28, 46))
    persistence = report["rates"]["bad_persistence"]
    assert persistence["k"] + bad_change["k"] == persistence["n"] == 46

    # every case lands where the ground truth says
    by_case = {(c["conversation_id"], c["turn_index"]): c for c in report["cases"]}
    for e in sample.expected:
        row = by_case[(e.conversation_id, e.turn_index)]
        if e.outcome == "ERROR":
            assert row["error"] and "no logged answer" in row["error"]
        elif e.outcome == "UNSCORABLE":
            assert row["fit"] == "UNSCORABLE" and row["verdict"] is None
        else:
            assert row["verdict"] == e.outcome
    assert len(report["review"]) == 28
    assert all(r["verdict"] == "BAD_NO_FIT" for r in report["review"])
    # follow-ups were rewritten with the conversation, and the report shows the question replayed
    rewritten = [c for c in report["cases"] if c["rewritten"]]
    assert rewritten and all(c["question"] != c["query"] for c in rewritten)
    # per-tag breakdown covers every tag in the log
    tags = {(t["tag"], t["value"]) for t in report["by_tag"]}
    assert {("department", "hr"), ("department", "finance"), ("channel", "web")} <= tags

    assert main(["report", run_id, "--format", "md", "--db", db]) == 0
    md = capsys.readouterr().out
    assert "## For review: BAD_NO_FIT (28)" in md and "| GOOD_FIT | 38 |" in md


def test_second_run_is_served_from_cache(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, db = workspace
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(log))
    assert main(["ingest", str(folder / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(folder / "candidate.yaml"), "--judge", "fake:default", "--db", db]
    assert main(args) == 0
    first = len(log.read_text().splitlines())
    assert first > 0
    assert main([*args, "--fresh"]) == 0
    assert len(log.read_text().splitlines()) == first  # a warm cache makes no model call


def test_user_errors_exit_2_without_traceback(
    workspace: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, db = workspace
    Store.open(db).close()  # an empty store: a missing one is refused (test_missing_store)
    assert main(["report", "run_nope", "--db", db]) == 2
    assert "no run matches" in capsys.readouterr().err
    assert (
        main(["run", "--target", str(folder / "candidate.yaml"), "--db", db, "--judge", "fake:default"]) == 2
    )
    assert "no labelled cases" in capsys.readouterr().err
    bad = folder / "bad.yaml"
    bad.write_text("target:\n  kind: nonsense\n")
    assert main(["run", "--target", str(bad), "--db", db, "--judge", "fake:default"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "Traceback" not in err


def test_real_models_are_blocked_in_tests(
    workspace: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, db = workspace
    assert main(["ingest", str(folder / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(folder / "candidate.yaml"), "--db", db, "--judge", "openai:gpt-4.1-mini"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "blocked in tests" in err
    with Store.open(db) as store:
        assert store.runs.list_runs() == []  # nothing planned before the models were built


@pytest.mark.parametrize("kind,field", [("settings", "judge"), ("target", "target")])
def test_schema_command_prints_json_schema(kind: str, field: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", kind]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert field in schema["properties"]
    assert main(["schema", "nope"]) == 2


@pytest.mark.parametrize("argv", [["report"], ["run", "--bogus"], ["nonsense-command"]])
def test_usage_errors_exit_2_without_traceback(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
