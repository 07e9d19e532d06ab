"""`ragreplay triage` on a demo replay run: BAD_NO_FIT rows split into three groups whose counts add up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from ragreplay.cli import triage_cmd
from ragreplay.cli.app import main
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.compare.triage import TriageReport, label_of
from ragreplay.core.pairwise import PairwiseJudgment
from ragreplay.core.types import Verdict
from ragreplay.judges.position import PairOutcome
from ragreplay.report.compare_triage import render_triage
from ragreplay.store import Store

LABELS = ["likely fixed", "likely worse", "changed, unclear"]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, int]:
    db = str(tmp_path_factory.mktemp("triage") / "store.db")
    data = demo_data_dir()
    assert main(["ingest", str(data / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(data / "challenger.yaml"), "--judge", "local", "--rewriter", "local"]
    assert main([*args, "--db", db, "--limit", "40"]) == 0
    with Store.open(db) as store:
        (run,) = store.runs.list_runs()
        bad_no_fit = sum(r.verdict == Verdict.BAD_NO_FIT for r in store.runs.load_results(run.id))
    return db, run.id, bad_no_fit


@pytest.mark.slow
def test_triage_splits_bad_no_fit_rows_into_three_groups(
    demo_run: tuple[str, str, int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, run_id, bad_no_fit = demo_run
    assert bad_no_fit >= 3
    capsys.readouterr()
    assert main(["triage", run_id[:12], "--judge", "local", "--db", db, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run_id"] == run_id and report["n"] == bad_no_fit
    assert list(report["groups"]) == LABELS
    assert sum(report["counts"].values()) == bad_no_fit
    assert all(report["counts"][label] == len(report["groups"][label]) for label in LABELS)
    winners = {"likely fixed": {"new"}, "likely worse": {"old"}, "changed, unclear": {"tie", None}}
    for label in LABELS:
        assert all(row["winner"] in winners[label] for row in report["groups"][label])
    assert report["counts"]["likely fixed"] > 0

    md = render_triage(TriageReport.model_validate(report), "md")
    positions = [md.index(f"## {label} ({report['counts'][label]})") for label in LABELS]
    assert positions == sorted(positions)  # new wins first

    monkeypatch.setattr(triage_cmd, "console", Console(width=200, color_system=None))
    assert main(["triage", run_id, "--judge", "local", "--db", db, "--order", "random", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "single random order" in text
    for label in LABELS:
        assert f"{label} (" in text


def test_triage_of_an_unknown_run_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store.open(str(tmp_path / "s.db")).close()  # an empty store: a missing one is refused
    assert main(["triage", "run_nope", "--judge", "local", "--db", str(tmp_path / "s.db")]) == 2
    assert "no run matches 'run_nope'" in capsys.readouterr().err


def _outcome(winner: str | None, consistent: bool | None) -> PairOutcome:
    judgment = PairwiseJudgment(
        winner=None, scores_a=None, scores_b=None, reason="", judge="j", prompt_version="1"
    )
    return PairOutcome.model_validate(
        {"winner": winner, "consistent": consistent, "judgments": [("xy", judgment)], "mode": "both"}
    )


def test_labels_map_new_wins_old_wins_and_everything_else() -> None:
    assert label_of(_outcome("y", True)) == "likely fixed"
    assert label_of(_outcome("x", True)) == "likely worse"
    assert label_of(_outcome("tie", False)) == "changed, unclear"  # order-inconsistent
    assert label_of(_outcome("tie", True)) == "changed, unclear"
    assert label_of(_outcome(None, None)) == "changed, unclear"  # could not score
