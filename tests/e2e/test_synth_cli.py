"""`ragreplay synth` end to end on SQLite: offline templates on the demo corpus (every kind, labelled
template-made, deterministic: the same command is a no-op version), the fake model through the provider layer
(cached: a second run makes no call), the corpus as a folder, and mistakes named with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.store import Store


def _rows(db: str, name: str) -> list[dict[str, object]]:
    with Store.open(db) as store:
        record = store.golden.get_version(name)
        assert record is not None
        assert record.recipe["source"] == "synth"
        return [r.as_json() for r in store.golden.load_rows(record.id)]


def _kind(row: dict[str, object]) -> str:
    tags = row["tags"]
    assert isinstance(tags, list)
    return str(next(t for t in tags if t.startswith("kind="))).removeprefix("kind=")


def test_templates_make_every_kind_offline_and_deterministically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    assert main(["synth", "--n", "20", "--name", "demo-synth", "--db", db]) == 0
    err = capsys.readouterr().err
    assert "20 questions, template-made (no model)" in err and "saved golden set demo-synth@v1" in err
    rows = _rows(db, "demo-synth")
    assert len(rows) == 20 and all("made=template" in r["tags"] for r in rows)  # type: ignore[operator]
    by_kind: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_kind.setdefault(_kind(row), []).append(row)
    assert {k: len(v) for k, v in by_kind.items()} == {
        "single_hop": 8,
        "multi_hop": 4,
        "unanswerable": 4,
        "follow_up": 4,
    }
    for row in by_kind["multi_hop"]:
        assert len(row["judgments"]) == 2  # type: ignore[arg-type]
    for row in by_kind["unanswerable"]:
        assert "judgments" in row and not row["judgments"] and "contexts" not in row
    for row in by_kind["follow_up"]:
        history = row["history"]
        assert isinstance(history, list) and [t["role"] for t in history] == ["human", "ai"]
        assert str(row["question"]).startswith(("And what does it say", "En wat staat erin"))
    for row in by_kind["single_hop"]:
        contexts = row["contexts"]
        assert isinstance(contexts, list) and len(contexts) == 1
        # the reference is taken from the chunk the row names (markdown emphasis aside)
        first_words = str(row["reference"]).split()[:3]
        assert " ".join(first_words) in contexts[0]["text"].replace("**", "")
    assert main(["synth", "--n", "20", "--name", "demo-synth", "--db", db]) == 0
    assert "no new version" in capsys.readouterr().err


def test_the_fake_model_writes_through_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(log))
    db = str(tmp_path / "s.db")
    out = tmp_path / "synth.jsonl"
    args = ["synth", "--n", "40", "--model", "fake:default", "--db", db, "--output", str(out)]
    assert main(args) == 0
    assert "written by fake:default" in capsys.readouterr().err
    first = out.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in first.splitlines()]
    assert len(rows) == 40 and all("made=model" in r["tags"] for r in rows)  # no reply shared by two tasks
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(calls) == 40 and {c["task"] for c in calls} == {"synth"}
    assert main(args) == 0  # every reply from the model cache: no call made
    assert len(log.read_text(encoding="utf-8").splitlines()) == 40
    assert out.read_text(encoding="utf-8") == first


def test_a_corpus_folder_and_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    corpus = demo_data_dir() / "corpus"
    assert main(["synth", "--corpus", str(corpus), "--n", "6", "--seed", "3", "--db", db]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(printed) == 6 and all(r["id"].startswith("syn_") for r in printed)
    assert main(["synth", "--corpus", str(tmp_path / "missing"), "--db", db]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["synth", "--n", "0", "--db", db]) == 2
    assert "--n 0: give a number from 1 to" in capsys.readouterr().err
    fresh = tmp_path / "fresh.db"
    assert main(["synth", "--n", "-3", "--db", str(fresh)]) == 2
    err = capsys.readouterr().err
    assert "--n -3: give a number from 1 to" in err and "started" not in err
    assert not fresh.exists()  # a wrong flag makes no store
    logged = tmp_path / "logged.yaml"
    logged.write_text("name: x\ntarget:\n  kind: logged\n  log: x.jsonl\n", encoding="utf-8")
    assert main(["synth", "--corpus", str(logged), "--db", db]) == 2
    assert "has no corpus" in capsys.readouterr().err
