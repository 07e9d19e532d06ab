"""`ragreplay compare` end to end: the demo champion vs challenger with the local judges, and two fake challengers
judged by the fake LLM judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ragreplay.cli import compare_cmd
from ragreplay.cli.app import main
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.compare.checks import (
    detect_language,
    expected_language,
    is_wrong_language,
    same_family_warnings,
)
from ragreplay.core.compare_stats import PreferenceStats
from ragreplay.core.run_summary import RateValue
from ragreplay.report.compare_labels import p_text, preference_text
from ragreplay.report.labels import rate_text


def _compare(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    # A wide console, so rich never wraps a figure across lines in the text report.
    monkeypatch.setattr(compare_cmd, "console", Console(width=400, color_system=None))
    capsys.readouterr()
    assert main(args) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("compare") / "store.db")


def _demo_args(db: str, fmt: str) -> list[str]:
    data = demo_data_dir()
    return [
        "compare",
        "--champion",
        str(data / "champion.yaml"),
        "--challenger",
        f"challenger={data / 'challenger.yaml'}",
        "--cases",
        str(data / "production.jsonl"),
        "--judge",
        "local",
        "--limit",
        "40",
        "--db",
        db,
        "--format",
        fmt,
    ]


@pytest.mark.slow
def test_compare_demo_in_json_md_and_text_reports_the_same_figures(
    demo_db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = json.loads(_compare(_demo_args(demo_db, "json"), capsys, monkeypatch))
    assert report["n_cases"] == 40 and report["order"] == "both"
    assert report["judge"] == "local:pairwise" and report["fit_judge"] == "local:fit"
    assert len(report["rows"]) == 40
    (ch,) = report["challengers"]
    assert ch["name"] == "challenger" and ch["n_cases"] == 40
    agreement = ch["agreement"]
    assert 0 < agreement["n"] <= 40 and 0 <= agreement["k"] <= agreement["n"]
    assert agreement["low"] <= agreement["value"] <= agreement["high"]
    for key in ("preference_disagreements", "preference_all"):
        pref = ch[key]
        assert pref["n_decided"] > 0 and 0 <= pref["p_value"] <= 1
        assert pref["low"] <= pref["share"] <= pref["high"]
    dis, everything = ch["preference_disagreements"], ch["preference_all"]
    assert dis["challenger_wins"] <= everything["challenger_wins"]
    assert dis["n_decided"] + dis["ties"] + ch["agreement_unscorable"] <= 40
    assert 0 <= ch["position"]["consistency_rate"] <= 1 and ch["position"]["n_pairs"] <= 40
    lat = ch["latency"]
    assert (
        0 < lat["champion_p50"] <= lat["champion_p95"] and 0 < lat["challenger_p50"] <= lat["challenger_p95"]
    )
    assert lat["delta_p50"] == pytest.approx(lat["challenger_p50"] - lat["champion_p50"])
    assert ch["cost"]["delta_usd"] == pytest.approx(ch["cost"]["challenger_usd"] - ch["cost"]["champion_usd"])
    tags = {(t["tag"], t["value"]) for t in ch["by_tag"]}
    assert ("language", "en") in tags and ("language", "nl") in tags
    assert ch["challenger_wrong_language"] + ch["champion_wrong_language"] > 0

    figures = [
        rate_text(RateValue.model_validate(agreement)),
        preference_text(PreferenceStats.model_validate(dis)),
        preference_text(PreferenceStats.model_validate(everything)),
        p_text(dis["p_value"]),
        f"{ch['champion_wrong_language']} / {ch['challenger_wrong_language']}",
    ]
    md = _compare(_demo_args(demo_db, "md"), capsys, monkeypatch)
    text = _compare(_demo_args(demo_db, "text"), capsys, monkeypatch)
    for out in (md, text):
        for figure in figures:
            assert figure in out, figure
        for label in ("agreement (FIT)", "preference when they disagree", "latency p50 delta", "cost delta"):
            assert label in out
        assert "By tag" in out and "language=nl" in out
        assert "single random order" not in out
    assert "| figure | challenger |" in md


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is valid YAML
    return path


def _fake_fixture(tmp: Path) -> tuple[Path, Path, Path, Path]:
    convs = [
        ("c1", "How many leave days do I get?", "You get 25 leave days per year.", "good"),
        ("c2", "When is the bonus paid?", "The bonus is paid in March.", "bad"),
        ("c3", "Can I work from home?", "Yes, up to three days a week.", "good"),
        ("c4", "What is the notice period?", "One month.", "bad"),
    ]
    log = tmp / "log.jsonl"
    log.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": cid,
                    "tags": {"department": "hr" if i % 2 else "sales"},
                    "messages": [
                        {"role": "human", "content": q},
                        {"role": "ai", "content": a, "feedback": fb},
                    ],
                }
            )
            for i, (cid, q, a, fb) in enumerate(convs)
        )
        + "\n",
        encoding="utf-8",
    )
    chunk = {"id": "policy#1", "text": "Employees get 25 leave days per year. The bonus is paid in April."}
    champion = _write(
        tmp / "champion.json", {"name": "prod", "target": {"kind": "fake", "echo_old_answer": True}}
    )
    a = _write(
        tmp / "a.json",
        {
            "target": {
                "kind": "fake",
                "answers": {
                    "How many leave days do I get?": {
                        "answer": "Employees get 25 leave days per year.",
                        "contexts": [chunk],
                    },
                    "When is the bonus paid?": {"answer": "The bonus is paid in April.", "contexts": [chunk]},
                },
                "default": "I don't know.",
            }
        },
    )
    b = _write(tmp / "b.json", {"target": {"kind": "fake", "default": "I don't know."}})
    return log, champion, a, b


def test_compare_two_fake_challengers_side_by_side_with_the_fake_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log, champion, a, b = _fake_fixture(tmp_path)
    base = ["compare", "--champion", str(champion), "--challenger", f"a={a}", "--challenger", f"b={b}"]
    base += ["--cases", str(log), "--judge", "fake:default", "--db", str(tmp_path / "s.db")]
    report = json.loads(_compare([*base, "--format", "json"], capsys, monkeypatch))
    assert [c["name"] for c in report["challengers"]] == ["a", "b"]
    assert report["judge"] == "fake:default" and report["champion"] == "prod"
    by_name = {c["name"]: c for c in report["challengers"]}
    rows = {(r["challenger"], r["case_id"]): r for r in report["rows"]}
    assert len(rows) == 8
    # challenger a answers two questions from its chunk: the fake judge prefers the grounded answer
    a_rows = [r for (name, _), r in rows.items() if name == "a"]
    grounded = [
        r for r in a_rows if r["question"] in ("How many leave days do I get?", "When is the bonus paid?")
    ]
    assert [r["preference"] for r in grounded] == ["challenger", "challenger"]
    assert all(r["consistent"] is True for r in grounded)
    prefs = [r["preference"] for r in a_rows]
    assert by_name["a"]["preference_all"]["challenger_wins"] == prefs.count("challenger")
    assert by_name["a"]["preference_all"]["champion_wins"] == prefs.count("champion")
    # b says "I don't know." everywhere: it never agrees with the champion
    assert by_name["b"]["agreement"]["k"] == 0 and by_name["b"]["agreement"]["n"] == 4
    text = _compare([*base, "--format", "text", "--order", "random", "--seed", "7"], capsys, monkeypatch)
    assert "prod (champion) vs each challenger" in text
    assert "single random order" in text and "not measured (single random order)" in text
    header = next(line for line in text.splitlines() if "figure" in line)
    assert header.index(" a ") < header.index(" b ")


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
    )


def test_comparisons_fit_80_columns(tmp_path: Path) -> None:
    log, champion, a, b = _fake_fixture(tmp_path)
    db = str(tmp_path / "s.db")
    long_a = "challenger-with-a-long-descriptive-name"
    _cli(
        "compare", "--champion", str(champion), "--challenger", f"{long_a}={a}", "--challenger", f"b={b}",
        "--cases", str(log), "--judge", "fake:default", "--db", db, "--format", "json",
    )  # fmt: skip
    out = _cli("comparisons", "--db", db).stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, out
    header = next(line for line in lines if line.startswith("comparison "))
    assert header.split() == ["comparison", "created", "status", "done", "sides", "judge", "cases"]
    (row,) = [line.split() for line in lines if line.startswith("cmp_")]  # one line: nothing wrapped
    assert row[3] == "done" and row[4] == "4/4"  # id, date (two words), status and counts whole
    assert "…" in out  # the names are cut, not wrapped (`compare-report ID` has them whole)


def test_compare_rejects_bad_flags_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log, champion, a, _ = _fake_fixture(tmp_path)
    base = ["compare", "--champion", str(champion), "--cases", str(log), "--judge", "local"]
    assert main([*base, "--challenger", f"champion={a}"]) == 2
    assert "and not 'champion'" in " ".join(capsys.readouterr().err.split())
    assert main([*base, "--challenger", f"a={a}", "--order", "sideways"]) == 2
    assert (
        main(
            [*base[:4], "nope", "--judge", "local", "--challenger", f"a={a}", "--db", str(tmp_path / "x.db")]
        )
        == 2
    )
    assert "is not a file, an ingested source nor a run" in " ".join(capsys.readouterr().err.split())


def test_language_and_family_hygiene() -> None:
    assert detect_language("How many days can I work from home?") == "en"
    assert detect_language("Hoeveel dagen mag ik thuiswerken van mijn manager?") == "nl"
    assert detect_language("€2,45 [doc#1]") is None
    assert is_wrong_language("Je mag 3 dagen per week thuiswerken als je dat wilt.", "en")
    assert not is_wrong_language("You may work from home 3 days a week.", "en")
    assert not is_wrong_language("anything", None)
    # the citation ("-en") is not read
    assert (
        detect_language(
            "Vanaf 1 februari 2026 geldt dit thuiswerkbeleid voor alle medewerkers in Nederland. "
            "[remote-work-2026-en#1]"
        )
        == "nl"
    )
    assert expected_language("Who is Lisa?", {"language": "nl"}) == "nl"
    assert expected_language("Hoeveel dagen mag ik thuiswerken van mijn manager?", {"language": "xx"}) == "nl"
    warnings = same_family_warnings(
        ["openai:gpt-4.1"], {"a": "openai:gpt-4o-mini", "b": "anthropic:claude-3-5"}
    )
    assert len(warnings) == 1 and "hygiene.same_family" in warnings[0] and "(a)" in warnings[0]
