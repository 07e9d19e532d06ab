"""`ragreplay compare` keeps every comparison in the store: the same command again reuses it without a single
target or model call, a comparison stopped by Ctrl-C resumes with only the remaining cases, and
`ragreplay compare-report` / `ragreplay comparisons` read the stored ones."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from e2e.test_compare import _fake_fixture
from ragreplay.cli import compare_cmd
from ragreplay.cli.app import main
from ragreplay.core.runs import RunStatus
from ragreplay.core.types import Answer, Case
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget

QUESTIONS = [
    "How many leave days do I get?",
    "When is the bonus paid?",
    "Can I work from home?",
    "What is the notice period?",
]


class Calls:
    """Counts target answers (by question) and the fake model's calls from its call log."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.questions: list[str] = []
        self.stop_at: int | None = None

    def model_calls(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    counter = Calls(tmp_path / "calls.jsonl")
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(counter.log))
    monkeypatch.setattr(compare_cmd, "console", Console(width=400, color_system=None))
    real = FakeTarget.answer

    async def answer(self: FakeTarget, question: str, case: Case) -> Answer:
        counter.questions.append(question)
        if counter.stop_at is not None and len(counter.questions) == counter.stop_at:
            # What Ctrl-C does: asyncio.run's SIGINT handler cancels the comparison mid-flight.
            signal.raise_signal(signal.SIGINT)
        return await real(self, question, case)

    monkeypatch.setattr(FakeTarget, "answer", answer)
    # a test run started in the background by a non-interactive shell has SIGINT ignored: Ctrl-C as in a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield counter
    signal.signal(signal.SIGINT, previous)


def _args(tmp: Path) -> list[str]:
    log, champion, a, b = _fake_fixture(tmp)
    args = ["compare", "--champion", str(champion), "--challenger", f"a={a}", "--challenger", f"b={b}"]
    return [*args, "--cases", str(log), "--judge", "fake:default", "--db", str(tmp / "s.db")]


def _verdicts(report: dict[str, object]) -> list[object]:
    """What the judges decided, row by row and per challenger: everything but the measured latencies."""
    rows = report["rows"]
    challengers = report["challengers"]
    assert isinstance(rows, list) and isinstance(challengers, list)
    keys = ("agreement", "preference_disagreements", "preference_all", "position")
    return [
        [(r["case_id"], r["challenger"], r["agreement"], r["preference"], r["consistent"]) for r in rows],
        [{k: c[k] for k in keys} for c in challengers],
    ]


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert isinstance(report, dict)
    return report


def test_the_same_compare_again_reuses_the_stored_comparison_without_any_call(
    tmp_path: Path, calls: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(tmp_path)
    first = _json(args, capsys)
    assert isinstance(first["id"], str) and first["id"].startswith("cmp_")
    assert len(calls.questions) == 12  # 4 cases x (champion + 2 challengers)
    model_calls = calls.model_calls()
    assert model_calls > 0

    second = _json(args, capsys)
    assert second == first
    assert len(calls.questions) == 12 and calls.model_calls() == model_calls

    # Re-shown from the store in every format, with the id on it.
    capsys.readouterr()
    assert (
        main(["compare-report", str(first["id"])[:12], "--db", str(tmp_path / "s.db"), "--format", "json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out) == first
    assert main(["compare-report", str(first["id"]), "--db", str(tmp_path / "s.db")]) == 0
    text = capsys.readouterr().out
    assert str(first["id"]) in text and "prod (champion) vs each challenger" in text
    assert len(calls.questions) == 12 and calls.model_calls() == model_calls

    assert main(["comparisons", "--db", str(tmp_path / "s.db")]) == 0
    listed = capsys.readouterr().out
    assert str(first["id"]) in listed and "done" in listed and "4/4" in listed

    # --fresh starts over under a new id; a changed flag (the order mode) is another comparison too.
    fresh = _json([*args, "--fresh"], capsys)
    assert fresh["id"] != first["id"] and len(calls.questions) == 24
    assert _verdicts(fresh) == _verdicts(first)
    other = _json([*args, "--order", "random", "--seed", "3"], capsys)
    assert other["id"] not in (first["id"], fresh["id"]) and len(calls.questions) == 36


def test_a_comparison_stopped_by_ctrl_c_resumes_with_only_the_remaining_cases(
    tmp_path: Path, calls: Calls, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(tmp_path)
    calls.stop_at = 7  # one case at a time: the first target call of the third case
    assert main([*args, "--concurrency", "1", "--format", "json"]) == 130  # typer's exit code for Ctrl-C
    assert calls.questions[:6] == [q for q in QUESTIONS[:2] for _ in range(3)]
    with Store.open(str(tmp_path / "s.db")) as store:
        (stopped,) = store.comparisons.list_comparisons()
        assert stopped.status == RunStatus.INTERRUPTED
        assert store.comparisons.compared_case_counts([stopped.id]) == {stopped.id: 2}
    model_calls = calls.model_calls()

    calls.stop_at, calls.questions = None, []
    resumed = _json(args, capsys)
    assert resumed["id"] == stopped.id
    assert sorted(set(calls.questions)) == sorted(QUESTIONS[2:]) and len(calls.questions) == 6
    assert calls.model_calls() > model_calls
    rows = resumed["rows"]
    assert isinstance(rows, list) and len(rows) == 8
    assert {r["question"] for r in rows} == set(QUESTIONS)
    with Store.open(str(tmp_path / "s.db")) as store:
        done = store.comparisons.get_comparison(stopped.id)
        assert done is not None and done.status == RunStatus.DONE and done.finished_at is not None

    # The resumed comparison reports what one uninterrupted run reports (latencies aside).
    fresh = _json([*args, "--fresh"], capsys)
    assert _verdicts(fresh) == _verdicts(resumed)


def test_compare_report_of_an_unknown_comparison_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store.open(str(tmp_path / "s.db")).close()  # an empty store: a missing one is refused
    assert main(["compare-report", "cmp_nope", "--db", str(tmp_path / "s.db")]) == 2
    assert "no comparison matches 'cmp_nope'" in " ".join(capsys.readouterr().err.split())
    assert main(["comparisons", "--db", str(tmp_path / "s.db")]) == 0
    assert "no comparisons yet" in capsys.readouterr().out
