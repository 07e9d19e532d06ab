"""`ragreplay shadow demo` end to end: real apps and proxy on loopback, every user's question shadowed, every
logged thumb stored against the right request, judged locally, reported with the feedback matrix."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.demo.shadow_demo import first_questions
from ragreplay.replay.replay_run import select_cases
from ragreplay.store import Store

pytestmark = pytest.mark.slow
N = 24


def test_shadow_demo_logs_judges_and_reports_every_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "shadow-demo"
    assert main(["shadow", "demo", "--out", str(out), "--requests", str(N)]) == 0
    printed = capsys.readouterr().out
    assert f"users answered by the champion: {N}/{N} (failed: 0)" in printed
    with Store.open(str(out / "shadow.db")) as store:
        cases = first_questions(select_cases(store), N)
        rows = list(store.shadow_rows.iter_shadow_rows())
        labels = store.shadow_feedback.shadow_feedback_for(r.request_id for r in rows)
        judged = store.shadow_judgments.load_shadow_judgments()
        assert store.shadow_feedback.count_shadow_feedback() == (N, N)
    assert len(rows) == N and len(judged) == N
    assert all(r.champion_answer.latency_ms and r.challenger_answer.latency_ms for r in rows)
    users = {c.user_id for c in cases if c.user_id}
    assert users and all(r.user_hash and r.user_hash not in users for r in rows if r.user_hash)  # hashed
    assert sum(r.user_hash is not None for r in rows) == sum(c.user_id is not None for c in cases)
    # each user's logged thumb landed on the request that user made
    asked = Counter((c.query, c.feedback) for c in cases)
    stored = Counter((r.query, labels[r.request_id].feedback) for r in rows)
    assert stored == asked
    assert all(item.source == "tap" for item in labels.values())
    # the champion runs the production configuration: it mostly gives the answers users rated
    logged = {c.query: c.old_answer for c in cases}
    assert sum(logged[r.query] == r.champion_answer.text for r in rows) >= 0.75 * N
    report = (out / "shadow-report.md").read_text(encoding="utf-8")
    good = sum(c.feedback.value == "good" for c in cases)
    assert f"| users rated champion good / bad | {good} / {N - good} |" in report
    assert "bad answers changed (BAD_NO_FIT, review)" in report
