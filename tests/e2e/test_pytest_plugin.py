"""The pytest plugin, through pytester in a fresh pytest process: a passing gate passes, a failing one fails
with the bars, an inconclusive one skips with the reason; replay rates likewise; installed but unused it does
nothing to a test run."""

from __future__ import annotations

from pathlib import Path

import pytest

from gates import BAD, GOOD, PASSING, make_set, targets

pytest_plugins = ["pytester"]

TEST_FILE = """
from ragreplay.testing.pytest_plugin import assert_gate_passes

def test_gate(ragreplay_gate):
    report = ragreplay_gate(champion={champion!r}, challenger={challenger!r}, judge="fake:default")
    assert_gate_passes(report)
"""


def run_gate_test(pytester: pytest.Pytester, tmp_path: Path, plan: dict) -> pytest.RunResult:  # type: ignore[type-arg]
    db = str(tmp_path / "gate.db")
    champion, challenger = targets(tmp_path, make_set(f"sqlite:///{db}", plan))
    pytester.makepyfile(TEST_FILE.format(champion=str(champion), challenger=str(challenger)))
    return pytester.runpytest_subprocess("--ragreplay-db", db, "-rs")


def test_a_passing_gate_passes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = run_gate_test(pytester, tmp_path, PASSING)
    result.assert_outcomes(passed=1)


def test_a_failing_gate_fails_with_its_bars(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = run_gate_test(pytester, tmp_path, {**PASSING, "win": [(GOOD, BAD), *PASSING["win"][1:]]})
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ragreplay gate fail*", "*wins lost (1)*"])


def test_an_inconclusive_gate_skips_with_the_reason(pytester: pytest.Pytester, tmp_path: Path) -> None:
    plan = {**PASSING, "contested": [(BAD, GOOD)] * 7 + [(GOOD, BAD)] * 3}
    result = run_gate_test(pytester, tmp_path, plan)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*ragreplay gate inconclusive*contested: inconclusive*"])


def test_replay_rates_decide_with_their_interval(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from ragreplay.cli.app import main
    from ragreplay.cli.demo_cmd import demo_data_dir
    from ragreplay.store import Store

    db = str(tmp_path / "replay.db")
    data = demo_data_dir()
    assert main(["ingest", str(data / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(data / "challenger.yaml"), "--judge", "local", "--rewriter", "local"]
    assert main([*args, "--db", db, "--limit", "60"]) == 0
    with Store.open(db) as store:
        (run,) = store.runs.list_runs()
    pytester.makepyfile(
        f"""
from ragreplay.testing.pytest_plugin import assert_replay_rates

def test_low_bar():
    assert_replay_rates({run.id!r}, db={db!r}, min_good_maintenance=0.01)

def test_impossible_bar():
    assert_replay_rates({run.id!r}, db={db!r}, min_good_maintenance=0.999)
"""
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)


def test_installed_but_unused_the_plugin_changes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("--ragreplay-db", "nowhere.db")
    result.assert_outcomes(passed=1)
    assert not Path(pytester.path / "nowhere.db").exists()
