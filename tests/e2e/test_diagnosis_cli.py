"""`ragreplay coverage` and `ragreplay retriever-diff` end to end on the shipped demo (corpus, configs, log) with
the packaged embeddings: a reference drawn from a real document is covered and an invented one is missing (with
its closest chunks), the fake LLM check agrees and is cached, reports are escaped; the BM25 champion against the
hybrid, recency-aware challenger shows the superseded memos dropped; the logged chunk ids stand for the old side;
input mistakes exit 2 naming file, line or flag and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragreplay.cli.app import main
from ragreplay.store import Store

DEMO = Path(__file__).resolve().parents[2] / "src" / "ragreplay" / "demo" / "data"
CHAMPION, CHALLENGER = DEMO / "champion.yaml", DEMO / "challenger.yaml"
REFERENCES = [
    {
        "id": "real-bonus",
        "question": "What is the target bonus?",
        "answer": "",
        "reference": "The target bonus is 10% of annual base salary, with a maximum payout of 15%. "
        "It is paid with the April salary of the following year.",
    },
    {
        "id": "real-bike",
        "question": "Hoeveel vergoedt Acme voor een e-bike?",
        "answer": "",
        "reference": "Maximaal €2.500 voor een e-bike of speed pedelec, en daarnaast maximaal €150 voor accessoires.",
    },
    {
        "id": "invented-gym",
        "question": "Do we get a <script>gym</script> | membership?",
        "answer": "",
        "reference": "Acme pays 75% of a gym membership up to €40 per month through the FitFirst programme.",
    },
    {
        "id": "invented-xmas",
        "question": "Wat is de kerstpakketregeling?",
        "answer": "",
        "reference": "Iedere medewerker krijgt in december een kerstpakket van €120 van leverancier Kerstkado BV.",
    },
    {"id": "no-reference", "question": "Anything else?", "answer": ""},
]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_real_reference_covered_invented_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refs = _write(tmp_path / "refs.jsonl", REFERENCES)
    report = _json(["coverage", str(refs), "--corpus", str(CHALLENGER)], capsys)
    status = {q["id"]: q["status"] for q in report["questions"]}
    assert status == {
        "real-bonus": "covered",
        "real-bike": "covered",
        "invented-gym": "missing",
        "invented-xmas": "missing",
        "no-reference": "skipped",
    }
    summary = report["summary"]
    assert summary["counts"] == {"covered": 2, "partly": 0, "missing": 2, "skipped": 1}
    assert summary["skipped_reasons"] == {"no reference": 1} and summary["documents"] == 40
    by_id = {q["id"]: q for q in report["questions"]}
    bonus = by_id["real-bonus"]
    assert all(f["held"] for f in bonus["facts"]) and bonus["closest"][0]["document"] == "bonus-2025-en"
    gym = by_id["invented-gym"]
    assert not any(f["held"] for f in gym["facts"]) and gym["held"] == 0.0
    assert len(gym["closest"]) == 3 and all(c["id"] and c["snippet"] for c in gym["closest"])
    # the folder itself works too (default chunking)
    folder = _json(["coverage", str(refs), "--corpus", str(DEMO / "corpus")], capsys)
    assert [q["status"] for q in folder["questions"]] == [q["status"] for q in report["questions"]]


def test_llm_check_with_the_fake_is_cached_and_md_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RAGREPLAY_FAKE_CALL_LOG", str(log))
    refs = _write(tmp_path / "refs.jsonl", REFERENCES)
    args = ["coverage", str(refs), "--corpus", str(CHALLENGER), "--judge", "fake:default"]
    args += ["--db", str(tmp_path / "c.db")]
    report = _json(args, capsys)
    verdicts = {q["id"]: q["judge"]["verdict"] for q in report["questions"] if q["judge"]}
    assert verdicts["real-bonus"] == "covered" and verdicts["invented-gym"] == "missing"
    assert report["summary"]["judge_prompt"].startswith("coverage-1.")
    calls = len(log.read_text().splitlines())
    assert calls == 4  # one per question with a reference
    assert main([*args, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert len(log.read_text().splitlines()) == calls  # answered from the model cache
    assert "Missing-document candidates (2)" in md
    assert "<script>" not in md and "&lt;script&gt;gym&lt;/script&gt; \\| membership" in md


def test_champion_against_challenger_drops_superseded_memos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text(
        "# the demo's outdated answers\nHow many days a week can I work from home?\n\n"
        "What is the home working allowance per day?\n",
        encoding="utf-8",
    )
    args = ["retriever-diff", "--old", str(CHAMPION), "--new", str(CHALLENGER), "--queries", str(questions)]
    report = _json([*args, "-k", "5"], capsys)
    assert (report["old"], report["new"], report["k"]) == ("champion", "challenger", 5)
    assert [r["id"] for r in report["rows"]] == ["line2", "line4"]
    for row in report["rows"]:
        diff = row["diff"]
        old_docs = {i.split("#")[0] for i in diff["old"]}
        new_docs = {i.split("#")[0] for i in diff["new"]}
        assert (
            len(diff["old"]) == 5 and len(diff["new"]) == 5
        )  # both read 5 deep (top_k 3 and 4 in the files)
        assert old_docs & {"remote-work-2022-en", "remote-work-2024-en"}  # BM25 finds the old memos
        assert "remote-work-2026-en" in new_docs and not new_docs & {
            "remote-work-2022-en",
            "remote-work-2024-en",
        }
        assert set(diff["dropped_docs"]) >= old_docs & {"remote-work-2022-en", "remote-work-2024-en"}
        assert diff["top1_changed"]
    agg = report["aggregate"]
    assert agg["queries"] == 2 and agg["top1_changed"]["k"] == 2
    dropped = {c["id"] for c in agg["most_dropped_docs"]}
    assert dropped & {"remote-work-2022-en", "remote-work-2024-en"}
    assert main([*args, "--format", "md"]) == 0
    assert "# Retriever diff at k=10" in capsys.readouterr().out


def test_logged_chunk_ids_stand_for_the_old_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "d.db")
    assert main(["-q", "ingest", str(DEMO / "production.jsonl"), "--db", db]) == 0
    capsys.readouterr()
    with Store.open(f"sqlite:///{db}") as store:
        source = store.cases.list_sources()[0].id
        cases = list(store.cases.iter_cases(source_ids=[source]))[:12]
    args = ["retriever-diff", "--new", str(CHALLENGER), "--queries", source, "--db", db, "--limit", "12"]
    report = _json([*args, "-k", "3"], capsys)
    assert report["old"] == "logged" and len(report["rows"]) == 12 and report["errors"] == 0
    for case, row in zip(cases, report["rows"], strict=True):
        assert row["id"] == case.id
        assert row["diff"]["old"] == [c.id for c in case.retrieved][:3]
    assert report["aggregate"]["mean_overlap_at_k"] < 1.0


def test_mistakes_exit_2_naming_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "x", "answer": ""}\nnot json\n', encoding="utf-8")
    out = tmp_path / "out.md"
    assert main(["coverage", str(bad), "--corpus", str(CHALLENGER), "--output", str(out)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err and not out.exists()

    fake = tmp_path / "fake.yaml"
    fake.write_text("target: {kind: fake}\n", encoding="utf-8")
    refs = _write(tmp_path / "refs.jsonl", REFERENCES[:1])
    assert main(["coverage", str(refs), "--corpus", str(fake)]) == 2
    err = capsys.readouterr().err
    assert "target.kind" in err and "kind: builtin" in err

    questions = tmp_path / "q.txt"
    questions.write_text("When is the bonus paid?\n", encoding="utf-8")
    assert main(["retriever-diff", "--new", str(CHALLENGER), "--queries", str(questions)]) == 2
    assert "--old OLD.yaml" in capsys.readouterr().err

    questions.write_text("ok?\n" + "x" * 4001 + "\n", encoding="utf-8")
    args = ["retriever-diff", "--old", str(CHAMPION), "--new", str(CHALLENGER), "--queries", str(questions)]
    assert main(args) == 2
    assert f"{questions}:2" in capsys.readouterr().err

    assert main([*args[:-1], "nope", "--db", str(tmp_path / "missing.db")]) == 2
    assert main(["coverage", str(refs), "--corpus", str(CHALLENGER), "--format", "html"]) == 2
