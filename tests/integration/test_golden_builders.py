"""Golden sets built from the store (SQLite and PostgreSQL): reviewed questions carry the reviewer's correct
answer as their reference; a regression set's items become rows, a wound or contested item with a reviewer's
answer carries it, a win the champion's liked answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.core.review import Review, taxonomy
from ragreplay.datasets.builders import rows_from_regset, rows_from_reviews
from ragreplay.datasets.golden import save_rows
from ragreplay.errors import ConfigError
from ragreplay.review.queues import build_regset_queue
from ragreplay.store import Store
from regset_data import build_shadow_regset, seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)
ANSWER = "Twenty-five days a year, thirty after ten years."


def _reviewed_set(store: Store) -> tuple[str, str]:
    seed_shadow(store, NOW)
    built = build_shadow_regset(store, NOW)
    queue = build_regset_queue(store, built.record.id, taxonomy([]), k=1)
    contested = next(i for i in store.reviews.load_items(queue.id) if i.source == "regset-contested")
    store.reviews.add_reviewer("ann")
    store.reviews.add_reviewer("bob")
    for reviewer, answer in (("ann", "An early answer."), ("bob", ANSWER)):  # the later answer wins
        store.reviews.save_review(
            queue.id,
            Review(
                reviewer=reviewer,
                item_key=contested.key,
                a_side="champion",
                choice="tie",
                correct_answer=answer,
                failure_tags=["outdated"] if reviewer == "bob" else [],
            ),
        )
    return built.record.id, contested.key


def test_reviews_with_a_correct_answer_become_rows(store: Store) -> None:
    _, key = _reviewed_set(store)
    (row,) = rows_from_reviews(store)
    assert row.id == key and row.reference == ANSWER
    assert {"source=review", "reviewer=bob", "failure=outdated"} <= set(row.tags)
    saved = save_rows(store, "reviewed", [row], {"source": "reviews"})
    assert saved.created and store.golden.load_rows(saved.record.id) == [row]


def test_regset_items_become_rows_with_the_reviewers_answer(store: Store) -> None:
    set_id, key = _reviewed_set(store)
    record, rows = rows_from_regset(store, "latest")
    assert record.id == set_id and len(rows) == len(store.regsets.load_items(set_id))
    by_id = {r.id: r for r in rows}
    assert by_id[key].reference == ANSWER and "reference=reviewer" in by_id[key].tags
    wins = [r for r in rows if "stratum=win" in r.tags]
    assert wins and all(r.reference and "reference=champion" in r.tags for r in wins)
    bare = [r for r in rows if "reference=none" in r.tags]
    assert all(r.reference is None and "stratum=win" not in r.tags for r in bare)
    with pytest.raises(ConfigError, match=r"no regression set .v99.*regset list"):
        rows_from_regset(store, "v99")


def test_golden_build_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "built.db")
    with Store.open(db) as store:
        _reviewed_set(store)
    assert main(["golden", "build", "--name", "reviewed", "--from-reviews", "--db", db]) == 0
    assert "saved golden set reviewed@v1: 1 rows" in capsys.readouterr().err
    assert main(["golden", "build", "--name", "wounds", "--from-regset", "latest", "--db", db]) == 0
    assert "saved golden set wounds@v1" in capsys.readouterr().err
    assert main(["golden", "build", "--name", "wounds", "--from-regset", "latest", "--db", db]) == 0
    assert "no new version" in capsys.readouterr().err
    assert main(["golden", "show", "wounds", "--format", "json", "--db", db]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["version"]["recipe"]["source"] == "regset" and shown["rows"]
