"""`ragreplay review ...` and `ragreplay calibration` through the real CLI on SQLite and PostgreSQL: a reviewer's
token link (shown once), queues from a regression set, a run's BAD_NO_FIT cases and the calibration sample,
export/import, and calibration's exit codes (0 fine, 1 alert, 2 user mistake)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.core.review import Review, ReviewItem, ReviewSide
from ragreplay.core.types import Verdict
from ragreplay.store import Store
from ragreplay.store.reviews import StoredReview
from regset_data import seed_shadow


@pytest.fixture
def seeded(store_url: str) -> str:
    with Store.open(store_url) as store:
        seed_shadow(store, datetime.now(UTC))
    return store_url


def out_err(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, " ".join(captured.err.split())


def _review_queue(url: str, queue_id: str, reviewer: str, agree: bool) -> None:
    with Store.open(url) as store:
        while (a := store.reviews.next_item_for(queue_id, reviewer)) is not None:
            judge = a.item.judge.winner if a.item.judge else "tie"
            human = judge if agree else ("challenger" if judge == "champion" else "champion")
            choice = "tie" if human == "tie" else ("A" if human == a.a_side else "B")
            store.reviews.save_review(
                queue_id,
                Review(reviewer=reviewer, item_key=a.item.key, a_side=a.a_side, choice=choice),  # type: ignore[arg-type]
            )


def test_reviewer_link_queues_export_import_and_calibration(
    seeded: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = seeded
    assert main(["review", "reviewer", "add", "ann", "--port", "9000", "--db", url]) == 0
    out, err = out_err(capsys)
    assert out.startswith("http://127.0.0.1:9000/review?token=") and "shown once" in err
    token = out.strip().split("token=")[1]
    with Store.open(url) as store:
        assert store.reviews.reviewer_for_token(token) == "ann"
    assert main(["review", "reviewer", "add", "ann", "--db", url]) == 2
    assert "already exists" in out_err(capsys)[1]

    # Nothing reviewed yet: not enough labels, exit 0.
    assert main(["calibration", "--db", url]) == 0
    assert "not enough labels yet" in out_err(capsys)[0]

    assert main(["review", "queue", "build", "--from", "calibration", "--since", "7d", "--db", url]) == 0
    out, err = out_err(capsys)
    queue_id = out.strip()
    assert queue_id.startswith("rq_") and "20 item(s)" in err
    _review_queue(url, queue_id, "ann", agree=True)
    assert main(["calibration", "--format", "json", "--db", url]) == 0
    report = json.loads(out_err(capsys)[0])
    assert report["status"] == "ok" and report["overall"]["n"] == 20 and report["overall"]["agree"] == 20

    assert main(["review", "queues", "--db", url]) == 0
    out, _ = out_err(capsys)
    assert queue_id in out and "20/20" in out and "ann:20" in out

    path = tmp_path / "reviews.jsonl"
    assert main(["review", "export", queue_id[:8], str(path), "--db", url]) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20
    # An outside tool's labels: the same items, another reviewer, all disagreeing with the judge.
    flipped = []
    for line in lines:
        obj = json.loads(line)
        obj["review"]["reviewer"] = "tool"
        obj["review"]["choice"] = {"A": "B", "B": "A", "tie": "A"}[obj["review"]["choice"]]
        flipped.append(json.dumps(obj))
    other = tmp_path / "tool.jsonl"
    other.write_text("\n".join(flipped) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        flipped[0] + "\n" + flipped[1].replace('"choice": "', '"choice": "X') + "\n", encoding="utf-8"
    )
    assert main(["review", "import", str(bad), "--db", url]) == 2
    err = out_err(capsys)[1]
    assert f"{bad}:2: field 'review.choice'" in err
    assert main(["review", "import", str(other), "--db", url]) == 0
    assert "20 review(s) imported" in out_err(capsys)[1]

    # Humans now split evenly on every item: nothing left to compare, the reviewers' agreement shows it.
    assert main(["calibration", "--db", url]) == 0
    out, _ = out_err(capsys)
    assert "20 reviewers split" in out and "ann vs tool: 0/20 agree" in out

    # A second week where the only reviewer disagrees with the judge: the alert fires, exit 1.
    assert main(["review", "queue", "build", "--from", "calibration", "--seed", "5", "--db", url]) == 0
    second = out_err(capsys)[0].strip()
    _review_queue(url, second, "bob", agree=False)
    assert main(["calibration", "--db", url]) == 1
    assert "ALERT" in out_err(capsys)[0]


def test_regset_queue_and_user_mistakes(seeded: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = seeded
    assert main(["review", "queue", "build", "--from", "regset:latest", "--db", url]) == 2
    assert "no regression set" in out_err(capsys)[1]
    assert main(["regset", "build", "--source", "shadow", "--embedder", "hash", "--db", url]) == 0
    capsys.readouterr()
    assert main(["review", "queue", "build", "--from", "regset:latest", "--k", "2", "--db", url]) == 0
    out, err = out_err(capsys)
    assert out.startswith("rq_") and "2 reviewer(s) per item" in err
    for args in (
        ["review", "queue", "build", "--from", "nowhere"],
        ["review", "queue", "build", "--from", "triage:"],
        ["review", "queue", "build", "--from", "calibration", "--k", "0"],
        ["review", "export", "rq_nope", "x.jsonl"],
        ["calibration", "--format", "xml"],
        ["calibration", "--since", "yesterday-ish"],
    ):
        assert main([*args, "--db", url]) == 2, args
        assert "Traceback" not in out_err(capsys)[1]


@pytest.mark.slow
def test_triage_queue_from_a_demo_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "store.db")
    data = demo_data_dir()
    assert main(["ingest", str(data / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(data / "challenger.yaml"), "--judge", "local", "--rewriter", "local"]
    assert main([*args, "--db", db, "--limit", "40"]) == 0
    with Store.open(db) as store:
        (run,) = store.runs.list_runs()
        bad_no_fit = sum(r.verdict == Verdict.BAD_NO_FIT for r in store.runs.load_results(run.id))
    capsys.readouterr()
    assert main(["review", "queue", "build", "--from", f"triage:{run.id[:12]}", "--db", db]) == 0
    queue_id = out_err(capsys)[0].strip()
    with Store.open(db) as store:
        items = store.reviews.load_items(queue_id)
    assert len(items) == bad_no_fit > 0
    assert all(i.source == "triage" and i.judge is None for i in items)


def test_calibration_shows_reviewer_agreement_only_from_enough_overlap(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(store_url) as store:
        items = [
            ReviewItem(
                key=f"i{n}",
                source="calibration",
                question=f"q{n}",
                champion=ReviewSide(answer="x"),
                challenger_side=ReviewSide(answer="y"),
            )
            for n in range(4)
        ]
        queue = store.reviews.create_queue("calibration", items, k=2)
        for reviewer, choices in (("ann", "AABA"), ("bob", "ABBA")):
            store.reviews.save_reviews(
                [
                    StoredReview(
                        queue.id,
                        Review(reviewer=reviewer, item_key=f"i{n}", a_side="champion", choice=c),
                    )
                    for n, c in enumerate(choices)
                ]
            )
    assert main(["calibration", "--db", store_url]) == 0
    out = out_err(capsys)[0]
    assert (
        "reviewers: 4 item(s) with 2+ reviews, Krippendorff's alpha: not enough overlap yet (needs 10)" in out
    )
    assert (
        "ann vs bob: 4 shared, not enough overlap yet (needs 10)" in out
        and "kappa" not in out.split("reviewers:")[1]
    )
    config = tmp_path / "ragreplay.yaml"
    config.write_text("review:\n  min_overlap: 4\n", encoding="utf-8")
    assert main(["calibration", "--format", "json", "--db", store_url, "--config", str(config)]) == 0
    reviewers = json.loads(out_err(capsys)[0])["reviewers"]
    assert reviewers["min_overlap"] == 4 and reviewers["enough"] is True
    assert reviewers["pairs"] == [
        {"a": "ann", "b": "bob", "n": 4, "agree": 3, "kappa": pytest.approx(0.5), "enough": True}
    ]
    assert main(["calibration", "--db", store_url, "--config", str(config)]) == 0
    assert "ann vs bob: 3/4 agree, Cohen's kappa 0.50" in out_err(capsys)[0]
