"""`ragreplay calibration rejudge` and `ragreplay calibration history` through the real CLI on SQLite and
PostgreSQL, counting the fake judge's calls in its call log: the estimate first (no call without --yes), labelled
items x 2 orders, then none, then only the new items; a SIGKILLed re-judge resumes without repeating a call;
the history per judge version; exit codes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.core.review import Review
from ragreplay.store import Store
from regset_data import seed_shadow


def _calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["key"] for line in log.read_text().splitlines() if line.strip()]


def _review(url: str, queue_id: str, n: int) -> None:
    with Store.open(url) as store:
        for _ in range(n):
            a = store.reviews.next_item_for(queue_id, "ann")
            assert a is not None
            human = (a.item.judge.winner if a.item.judge else None) or "tie"
            choice = "tie" if human == "tie" else ("A" if human == a.a_side else "B")
            review = {"reviewer": "ann", "item_key": a.item.key, "a_side": a.a_side, "choice": choice}
            store.reviews.save_review(queue_id, Review.model_validate(review))


def _queue(url: str, capsys: pytest.CaptureFixture[str], n: int) -> str:
    with Store.open(url) as store:
        seed_shadow(store, datetime.now(UTC))
    args = ["review", "queue", "build", "--from", "calibration", "--n", str(n), "--db", url]
    assert main(args) == 0
    return capsys.readouterr().out.strip()


def _err(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, " ".join(captured.err.split())


def test_rejudge_estimates_first_then_makes_exactly_the_calls_needed(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_url
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(log))
    queue_id = _queue(url, capsys, 20)
    _review(url, queue_id, 12)
    rejudge = ["calibration", "rejudge", "--judge", "fake:default", "--db", url]

    # No --yes and no terminal: the estimate, then a refusal; not one call.
    assert main(rejudge) == 2
    _, err = _err(capsys)
    assert "estimate: 12 item(s) to judge with fake:default: 24 model call(s) (both orders)" in err
    assert "0 already in the model cache, 24 to make" in err and "$0.00" in err
    assert "pass --yes" in err and _calls(log) == []

    assert main([*rejudge, "--yes", "--format", "json"]) == 0
    out, err = _err(capsys)
    assert len(_calls(log)) == 24 and err.index("estimate:") < err.index("judged 12 item(s)")
    report = json.loads(out)
    (side,) = report["side_by_side"]
    assert side["old"]["judge"] == "fake:default@p1" and side["new"]["version"] == report["judge_version"]
    assert side["old"]["n"] == side["new"]["n"] == side["old_vs_new"]["n"] > 0
    assert side["old"]["agree"] == side["old"]["n"]  # ann agreed with the kept decisions

    # Nothing new: no call, and the text shows old and new side by side.
    assert main([*rejudge, "--yes"]) == 0
    out, err = _err(capsys)
    assert len(_calls(log)) == 24 and "12 already judged by this version" in err
    assert "old vs new on the same" in out and "old fake:default@p1" in out and "new fake:default@" in out

    # Eight more reviews: only those eight are judged, both orders, less what the cache answers (two rows of one
    # request with the same answers make the same request: asked once).
    _review(url, queue_id, 8)
    code = main([*rejudge, "--yes", "--format", "json"])
    out, err = _err(capsys)
    found = re.search(r"8 item\(s\) to judge with fake:default: 16 model call\(s\) .*?, (\d+) to make", err)
    assert found is not None, err
    assert len(_calls(log)) == 24 + int(found.group(1)) > 24
    status = json.loads(out)["status"]
    assert code == {"alert": 1}.get(status, 0)

    # History: both versions, from both computations; `calibration` adds a snapshot only when figures change.
    assert main(["calibration", "history", "--format", "json", "--db", url]) == 0
    history = json.loads(_err(capsys)[0])
    assert {h["judge"] for h in history} >= {"fake:default@p1"} and len(
        {h["judge_version"] for h in history}
    ) == 2
    assert [h["n"] for h in history if h["judge"] == "fake:default@p1"] == [20, 12]
    assert main(["calibration", "--db", url]) in (0, 1)
    out, _ = _err(capsys)
    assert "per judge version" in out and "fake:default@p1" in out
    assert main(["calibration", "history", "--db", url]) == 0
    out, _ = _err(capsys)
    assert len(out.strip().splitlines()) == 1 + len(history)  # nothing changed: no new snapshot
    assert "rejudge" in out and "fake:default@p1" in out


def test_user_mistakes_exit_2_without_a_traceback(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = store_url
    Store.open(url).close()
    assert main(["calibration", "history", "--db", url]) == 0
    assert "no calibration history yet" in _err(capsys)[1]
    assert main(["calibration", "rejudge", "--judge", "fake:default", "--db", url]) == 0
    assert "0 human-labelled item(s)" in _err(capsys)[1]
    for args in (
        ["calibration", "rejudge", "--judge", "nowhere:model"],
        ["calibration", "rejudge", "--judge", "fake:default", "--format", "xml"],
        ["calibration", "rejudge", "--judge", "fake:default", "--since", "someday"],
        ["calibration", "history", "--format", "xml"],
        ["calibration", "--format", "xml"],
    ):
        assert main([*args, "--db", url]) == 2, args
        assert "Traceback" not in _err(capsys)[1]


def test_a_sigkilled_rejudge_resumes_without_repeating_a_call(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = store_url
    queue_id = _queue(url, capsys, 10)
    _review(url, queue_id, 10)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, "RAGREPLAY_FAKE_CALL_LOG": str(log), "RAGREPLAY_FAKE_LATENCY_MS": "5"}
    args = [sys.executable, "-m", "ragreplay.cli.app", "calibration", "rejudge", "--judge", "fake:default"]
    args += ["--yes", "--concurrency", "2", "--db", url]

    # Every call after the 9th hangs, so the kill lands at a known point.
    first = subprocess.Popen(args, env={**env, "RAGREPLAY_FAKE_HANG_AFTER": "9"}, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_calls(log)) < 9 and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)  # let the writer save what the finished calls produced
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert len(_calls(log)) == 9
    with Store.open(url) as store:
        assert 0 < len(store.review_judgments.load_review_judgments()) < 10

    second = subprocess.run(args, env=env, capture_output=True, timeout=120)
    assert second.returncode in (0, 1), second.stderr.decode()
    keys = Counter(_calls(log))
    assert len(keys) == 20 and max(keys.values()) == 1, "a model call was repeated after the kill"
    with Store.open(url) as store:
        assert len(store.review_judgments.load_review_judgments()) == 10
