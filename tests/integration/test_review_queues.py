"""The review feature on SQLite and PostgreSQL: queues from a regression set, a run's BAD_NO_FIT cases and the
calibration sample; calibration figures from reviews; reviews as JSONL (a bad line writes nothing)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragreplay.core.review import Review, taxonomy
from ragreplay.errors import InputError, RagreplayError
from ragreplay.regset.build import TokenHashEmbedder, build_regset
from ragreplay.review.calibration import calibration_report
from ragreplay.review.queues import (
    build_calibration_queue,
    build_regset_queue,
    calibration_sample,
    judge_decision,
    stratum_of,
)
from ragreplay.review.transfer import export_reviews, import_reviews
from ragreplay.store import Store
from regset_data import build_shadow_regset, seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)
TAX = taxonomy(["stale-table"])


def test_regset_queue_holds_wounds_then_contested_with_both_answers(store: Store) -> None:
    seeded = seed_shadow(store, NOW)
    sizes = {"win": 5, "contested": 4, "wound": 3}
    built = build_regset(
        store, WEEK, NOW, sizes=sizes, seed=7, sources=("shadow",), embed_with=TokenHashEmbedder()
    )
    queue = build_regset_queue(store, "latest", TAX, k=2)
    items = store.reviews.load_items(queue.id)
    assert queue.kind == "regset" and queue.k == 2 and queue.recipe["taxonomy_version"] == TAX.version
    assert [i.source for i in items] == ["regset-wound"] * 3 + ["regset-contested"] * 4
    for item in items:
        assert seeded.strata[item.key] in ("wound", "contested")
        assert item.champion.answer.startswith("champion answer")
        assert item.challenger_side.answer.startswith("challenger answer")
        assert item.judge is not None and item.challenger == "b"
    assert built.record.version == 1
    with pytest.raises(RagreplayError, match="no regression set"):
        build_regset_queue(store, "v9", TAX)


def test_calibration_sample_is_stratified_seeded_and_keeps_the_judge_aside(store: Store) -> None:
    seed_shadow(store, NOW)
    judged = store.shadow_judgments.load_shadow_judgments(WEEK)
    strata = Counter(
        stratum_of(row, judge_decision(rec)) for row, rec in judged if judge_decision(rec).winner
    )
    sample = calibration_sample(judged, 6, seed=3)
    assert len(sample) == 6 == len({i.key for i in sample})
    got = Counter(
        (",".join(f"{k}={v}" for k, v in sorted(i.tags.items())), i.judge.winner)  # type: ignore[union-attr]
        for i in sample
    )
    assert len(got) == min(6, len(strata))  # one per stratum before any stratum gets a second
    assert [i.key for i in calibration_sample(judged, 6, seed=3)] == [i.key for i in sample]
    everything = calibration_sample(judged, 1000, seed=3)
    assert len(everything) == sum(strata.values())
    queue = build_calibration_queue(store, WEEK, TAX, n=20, seed=1)
    assert queue.kind == "calibration" and queue.n_items == 20 and queue.recipe["n"] == 20


def _answer_all(
    store: Store, queue_id: str, reviewer: str, agree: bool, tags: list[str] | None = None
) -> int:
    n = 0
    while (a := store.reviews.next_item_for(queue_id, reviewer)) is not None:
        judge = a.item.judge.winner  # type: ignore[union-attr]
        human = judge if agree else ("challenger" if judge == "champion" else "champion")
        choice = "tie" if human == "tie" else ("A" if human == a.a_side else "B")
        review = Review.model_validate(
            {
                "reviewer": reviewer,
                "item_key": a.item.key,
                "a_side": a.a_side,
                "choice": choice,
                "failure_tags": tags or [],
            }
        )
        store.reviews.save_review(queue_id, review)
        n += 1
    return n


def test_calibration_from_reviews_alerts_when_humans_disagree(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=20, seed=1)
    assert _answer_all(store, queue.id, "ann", agree=True) == 20
    report = calibration_report(store)
    cal = report.calibration
    assert cal.overall.n == 20 and cal.overall.agreement.k == 20 and cal.status == "ok"
    assert report.queues == [queue.id] and report.reviews == 20 and cal.judges == ["fake:default@p1"]
    assert {a.label for a in cal.per_tag} == {"dept=hr", "dept=it"}
    second = build_calibration_queue(store, WEEK, TAX, n=20, seed=2)
    _answer_all(store, second.id, "bob", agree=False, tags=["wrong-version"])
    cal = calibration_report(store).calibration
    assert cal.overall.n == 40 and cal.overall.agreement.k == 20 and cal.status == "alert"
    assert [a.label for a in cal.per_failure_tag] == ["wrong-version"]
    assert cal.per_failure_tag[0].status == "alert"


def test_export_then_import_round_trips_and_a_bad_line_writes_nothing(store: Store, tmp_path: Path) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=4, seed=1)
    _answer_all(store, queue.id, "ann", agree=True)
    path = tmp_path / "reviews.jsonl"
    assert export_reviews(store, queue.id, path) == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["queue"] == queue.id for line in lines)

    # The same reviews under another reviewer's name, imported: 4 more reviews.
    renamed = [json.loads(line) for line in lines]
    for obj in renamed:
        obj["review"]["reviewer"] = "external"
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(o) + "\n" for o in renamed), encoding="utf-8")
    assert import_reviews(store, good, TAX) == 4
    assert len(store.reviews.load_reviews(queue.id)) == 8

    bad_lines = [
        json.dumps({**renamed[0], "review": {**renamed[0]["review"], "reviewer": "x1"}}),
        "{not json",
        json.dumps({**renamed[1], "review": {**renamed[1]["review"], "reviewer": "x2", "choice": "C"}}),
        json.dumps({**renamed[2], "queue": "rq_nope"}),
        json.dumps(
            {**renamed[3], "review": {**renamed[3]["review"], "reviewer": "x3", "failure_tags": ["nope"]}}
        ),
        json.dumps({**renamed[3], "review": {**renamed[3]["review"], "reviewer": "x4", "item_key": "zzz"}}),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(bad_lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        import_reviews(store, bad, TAX)
    where = [(p.line, p.field) for p in caught.value.problems]
    assert where == [
        (2, None),
        (3, "review.choice"),
        (4, "queue"),
        (5, "review.failure_tags"),
        (6, "review.item_key"),
    ]
    assert all(p.file == str(bad) for p in caught.value.problems)
    assert len(store.reviews.load_reviews(queue.id)) == 8  # nothing written, not even line 1


def test_what_reviewers_write_flows_into_the_next_regression_set(store: Store) -> None:
    from ragreplay.regset.build import rebuild
    from ragreplay.review.references import reviewed_references

    seed_shadow(store, NOW)
    first = build_shadow_regset(store, NOW)
    queue = build_regset_queue(store, first.record.id, TAX, k=1)
    store.reviews.add_reviewer("ann")
    held = store.reviews.next_item_for(queue.id, "ann")
    assert held is not None
    store.reviews.save_review(
        queue.id,
        Review(
            reviewer="ann",
            item_key=held.item.key,
            a_side=held.a_side,
            choice="B",
            correct_answer="Twenty-five days a year.",
            failure_tags=["wrong-version"],
        ),
    )
    references = reviewed_references(store)
    (key,) = references
    assert references[key] == ("Twenty-five days a year.", "wrong-version")
    second = build_shadow_regset(store, NOW, references=references)
    reviewed = next(i for i in second.items if i.key == key)
    # the reviewer's answer is the wound's reference now: the gate judges the challenger against it
    assert reviewed.stratum == "wound" and reviewed.candidate.reference_answer == "Twenty-five days a year."
    assert reviewed.candidate.failure_tag == "wrong-version"
    assert second.record.recipe["references"][key] == ["Twenty-five days a year.", "wrong-version"]
    assert rebuild(
        store, second.record, TokenHashEmbedder()
    ).identical  # the recipe keeps what makes it reproducible


def test_the_dashboard_shows_the_calibration_banner(store: Store, store_url: str) -> None:
    from starlette.testclient import TestClient

    from ragreplay.web.app import create_app

    seed_shadow(store, NOW)
    with TestClient(create_app(store_url, cache_s=0)) as client:
        assert 'id="calibration"' not in client.get("/").text  # nobody reviewed yet: no banner
        queue = build_calibration_queue(store, WEEK, TAX, n=20, seed=1)
        _answer_all(store, queue.id, "ann", agree=True)
        assert 'data-status="ok"' in client.get("/").text
        second = build_calibration_queue(store, WEEK, TAX, n=20, seed=2)
        _answer_all(store, second.id, "bob", agree=False, tags=["wrong-version"])
        page = client.get("/").text
        assert 'id="calibration" data-status="alert"' in page and "wrong-version" in page
        twin = client.get("/index.json").json()
        assert twin["calibration"]["status"] == "alert"
        assert twin["failure_tags"] == [{"tag": "wrong-version", "items": 20}]
        assert 'data-tag="wrong-version"' in page
