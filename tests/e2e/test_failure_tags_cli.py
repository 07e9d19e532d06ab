"""Failure tags from review through the real commands, on SQLite and PostgreSQL: `ragreplay shadow report` per
challenger and `ragreplay gate` / `gate-report` for the set's questions, in every format, a team's own tag name
holding HTML and Markdown shown inert, and "no reviews yet" before any review."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from builders import make_case
from gates import PASSING, make_set, question, targets
from ragreplay.cli.app import main
from ragreplay.core.review import Review
from ragreplay.review.queues import case_item, shadow_item
from ragreplay.store import Store
from ragreplay.store.reviews import StoredReview
from regset_data import seed_shadow

EVIL = "<b>bold</b>|[x](javascript:alert(1))"


def _reviews(store: Store, queue_id: str, tagged: dict[str, list[str]], reviewer: str = "ann") -> None:
    store.reviews.save_reviews(
        [
            StoredReview(
                queue_id,
                Review(reviewer=reviewer, item_key=key, a_side="champion", choice="A", failure_tags=tags),
            )
            for key, tags in tagged.items()
        ]
    )


def test_shadow_report_lists_failure_tags_per_challenger(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(store_url) as store:
        seed_shadow(store, datetime.now(UTC))
    args = ["shadow", "report", "--since", "7d", "--db", store_url]
    assert main([*args, "--format", "md"]) == 0
    before = capsys.readouterr().out
    assert "## Failure tags from review: b" in before and "No reviews yet." in before
    with Store.open(store_url) as store:
        found = store.shadow_browse.shadow_row_with_judgment("row-003")
        assert found is not None
        queue = store.reviews.create_queue("calibration", [shadow_item(found[0], None, "calibration")])
        _reviews(store, queue.id, {"row-003": ["wrong-version", EVIL]})
        _reviews(store, queue.id, {"row-003": ["wrong-version"]}, reviewer="bob")
    assert main([*args, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "2 review(s) of 1 item(s)." in md and "| wrong-version | 1 | 2 |" in md
    assert "<b>" not in md and "](javascript" not in md and "&lt;b&gt;bold&lt;/b&gt;" in md
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failure_tags"]["b"]["reviews"] == 2 and data["failure_tags"]["c"]["reviews"] == 0
    assert main([*args, "--format", "text"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Failure tags from review, b: 2 review(s) of 1 item(s)" in text and "[x](javascript" in text


def test_gate_reports_list_the_failure_tags_of_the_sets_questions(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    gate = ["gate", "--champion", str(champion), "--challenger", str(challenger), "--judge", "fake:default"]
    assert main([*gate, "--db", store_url, "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["failure_tags"] == {"reviews": 0, "items": 0, "simulated_reviews": 0, "tags": []}
    with Store.open(store_url) as store:
        asked = [make_case(id=f"case{i}", query=question("wound", i)) for i in range(2)]
        other = make_case(id="case-other", query="a question the set does not hold")
        items = [case_item(c, "an answer", []) for c in (*asked, other)]
        queue = store.reviews.create_queue("triage", items, recipe={"source": "triage:run_x"})
        _reviews(
            store, queue.id, {"case0": [EVIL], "case1": ["missing-document"], "case-other": ["wrong-version"]}
        )
    shown = ["gate-report", first["gate"]["id"], "--db", store_url]
    assert main([*shown, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "### Failure tags reviewers gave these questions" in md and "| missing-document | 1 | 1 |" in md
    assert "wrong-version" not in md  # a question outside the set
    assert "<b>" not in md and "](javascript" not in md
    assert main([*shown, "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "failure tags reviewers gave these questions: 2 review(s) of 2 item(s)" in text and EVIL in text
    assert main([*shown, "--format", "json"]) == 0
    tags = json.loads(capsys.readouterr().out)["failure_tags"]["tags"]
    assert sorted(t["tag"] for t in tags) == sorted([EVIL, "missing-document"])
