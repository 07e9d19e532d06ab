"""`ragreplay regset ...` through the CLI on SQLite and PostgreSQL, on a store seeded with a week of judged
shadow rows and users' feedback and with the shipped production log ingested: build (defaults, sizes,
reproducible, shortfalls), list, show in every format, diff, export/import, pin/drop, check, and user mistakes
(exit 2 with the flag and the fix, never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.core.gate import ItemOutcome
from ragreplay.core.runs import RunStatus
from ragreplay.store import Store
from ragreplay.store.gates import GateItemRecord, GateRecord
from regset_data import REPLAY_SINCE, ingest_production, seed_shadow


@pytest.fixture
def seeded(store_url: str) -> str:
    with Store.open(store_url) as store:
        seed_shadow(store, datetime.now(UTC))
        ingest_production(store)
    return store_url


def cli(url: str, *args: str) -> int:
    return main(["regset", *args, "--db", url])


def out_err(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, " ".join(captured.err.split())


SMALL = (
    "--since",
    "7d",
    "--source",
    "shadow",
    "--wins",
    "5",
    "--contested",
    "4",
    "--wounds",
    "3",
    "--seed",
    "3",
)


def test_build_with_the_requirements_defaults_from_both_sources(
    seeded: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(seeded, "build", "--since", REPLAY_SINCE) == 0
    out, err = out_err(capsys)
    assert out.startswith("built regression set v1 (rs_") and "wound 60/60" in out
    assert "216 replay case(s) (69 follow-up(s) left out" in err and "33 shadow row(s)" in err
    with Store.open(seeded) as store:
        record = store.regsets.get_set("latest")
        assert record is not None and record.recipe["sizes"] == {"win": 80, "contested": 60, "wound": 60}
        assert record.recipe["sources"] == ["shadow", "replay"] and record.recipe["embedder"] == "use"
        assert record.recipe["seed"] == 0
        items = store.regsets.load_items(record.id)
    assert {i.candidate.source for i in items} == {"shadow", "replay"}
    # the shipped log holds fewer than 80 liked, standalone questions and no judged pairs (contested comes from
    # the shadow rows alone; a question both logs hold takes its most pressing stratum): both are reported
    pool = record.recipe["found"]["pool_sizes"]
    assert pool["win"] < 80 and pool["contested"] < 60 and pool["wound"] > 60
    assert record.counts == {"win": pool["win"], "contested": pool["contested"], "wound": 60}
    assert f"win {pool['win']}/80" in out and f"contested {pool['contested']}/60" in out
    missing = 60 - pool["contested"]
    assert (
        f"short: contested: {missing} short of 60; the window held {pool['contested']} such question(s)"
        in err
    )
    assert f"short: win: {80 - pool['win']} short of 80" in err and "Fix: widen --since" in err
    assert len(items) == sum(record.counts.values())


def test_same_recipe_same_items_and_check(seeded: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(seeded, "build", *SMALL) == 0
    assert cli(seeded, "build", *SMALL) == 0
    out, _ = out_err(capsys)
    assert "v1" in out and "v2" in out and "win 5/5" in out and "contested 4/4" in out and "wound 3/3" in out
    with Store.open(seeded) as store:
        first, second = store.regsets.get_set("v1"), store.regsets.get_set("v2")
        assert first is not None and second is not None
        assert store.regsets.load_items(first.id) == store.regsets.load_items(second.id)
    assert cli(seeded, "check", "v1") == 0
    assert "is reproducible: its recipe gives the same 12 items" in out_err(capsys)[1]
    assert cli(seeded, "diff", "v1", "v2") == 0
    assert "0 added, 0 removed, 0 moved between strata" in out_err(capsys)[0]


def test_list_show_and_diff(seeded: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(seeded, "list") == 0
    assert "no regression set yet" in out_err(capsys)[1]
    assert cli(seeded, "build", *SMALL) == 0
    assert cli(seeded, "build", *SMALL[:-1], "4", "--wins", "8") == 0
    capsys.readouterr()
    assert cli(seeded, "list") == 0
    listing = out_err(capsys)[0].splitlines()
    assert listing[1].startswith("v2 ") and listing[2].startswith("v1 ") and len(listing) == 3

    assert cli(seeded, "show", "v1") == 0
    text = out_err(capsys)[0]
    assert text.startswith("regression set v1 (rs_")
    assert "recipe: built from shadow over" in text and "seed 3" in text and "embedder use" in text
    assert "wins: the champion's answer was liked" in text and "open wounds:" in text
    with Store.open(seeded) as store:
        v1 = store.regsets.load_items(store.regsets.get_set("v1").id)  # type: ignore[union-attr]
    assert all(i.key in text for i in v1)

    assert cli(seeded, "show", "latest", "--format", "json") == 0
    data = json.loads(out_err(capsys)[0])
    assert data["record"]["version"] == 2 and len(data["items"]) == 8 + 4 + 3 and data["shortfall"] == {}
    assert cli(seeded, "show", "v2", "--format", "md") == 0
    md = out_err(capsys)[0]
    assert md.startswith("# Regression set v2") and "## Wins" in md and "| key | question |" in md

    assert cli(seeded, "diff", "v1", "v2", "--format", "json") == 0
    changes = json.loads(out_err(capsys)[0])
    assert len(changes["added"]) >= 3 and all(c["question"] for c in changes["added"])
    assert cli(seeded, "diff", "v1", "v2") == 0
    assert "v1 (rs_" in out_err(capsys)[0]


def test_export_import_round_trip_and_a_bad_file(
    seeded: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(seeded, "build", *SMALL) == 0
    capsys.readouterr()
    path = tmp_path / "monday.jsonl"
    assert cli(seeded, "export", "v1", str(path)) == 0
    exported = out_err(capsys)[1]
    assert exported.startswith("exported v1 (rs_") and exported.endswith(f"12 items) to {path}")
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == 13 and "secret-user-hash" not in text
    with Store.open(seeded) as store:
        user_ids = {c.user_id for c in store.cases.iter_cases() if c.user_id}
    assert not any(f'"{uid}"' in text for uid in user_ids)

    assert cli(seeded, "import", str(path)) == 0
    err = out_err(capsys)[1]
    assert f"imported {path} as v2 (rs_" in err and "(was v1, rs_" in err
    assert cli(seeded, "diff", "v1", "v2") == 0
    assert "0 added, 0 removed, 0 moved" in out_err(capsys)[0]

    lines = text.splitlines()
    broken = json.loads(lines[4])
    broken["stratum"] = "maybe"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(broken), "nope"]) + "\n", encoding="utf-8")
    assert cli(seeded, "import", str(bad)) == 2
    _, err = out_err(capsys)
    assert f"{bad}:3: field 'stratum'" in err and f"{bad}:4: not valid JSON" in err
    assert "Traceback" not in err
    with Store.open(seeded) as store:
        assert [r.version for r in store.regsets.list_sets()] == [2, 1]  # nothing written


def test_pin_and_drop(seeded: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(seeded, "build", *SMALL) == 0
    with Store.open(seeded) as store:
        items = store.regsets.load_items(store.regsets.get_set("v1").id)  # type: ignore[union-attr]
    wound = next(i for i in items if i.stratum == "wound")
    drawn = next(i for i in items if i.inclusion_probability < 1)
    capsys.readouterr()
    assert cli(seeded, "drop", wound.key, "--reason", "a test question") == 0
    assert f"v2: dropped {wound.key} (wound): a test question" in out_err(capsys)[1]
    assert cli(seeded, "pin", drawn.key, "--reason", "the CAO clause") == 0
    assert f"v3: pinned {drawn.key}" in out_err(capsys)[1]
    assert cli(seeded, "pin", drawn.key, "--reason", "again") == 0
    assert "already pinned" in out_err(capsys)[1]
    assert cli(seeded, "show", "v3") == 0
    shown = out_err(capsys)[0]
    assert f"{drawn.key}: again" in shown
    rows = [line.split()[0] for line in shown.splitlines() if line.startswith("  q_")]
    assert drawn.key in rows and wound.key not in rows
    # the next build keeps the pin and leaves the drop out
    assert cli(seeded, "build", *SMALL) == 0
    with Store.open(seeded) as store:
        latest = {i.key: i for i in store.regsets.load_items(store.regsets.get_set("v4").id)}  # type: ignore[union-attr]
    assert wound.key not in latest and latest[drawn.key].pinned
    assert cli(seeded, "pin", "q_0000000000000000", "--reason", "x") == 2
    assert "no regression set holds the key 'q_0000000000000000'. Fix:" in out_err(capsys)[1]
    assert cli(seeded, "drop", wound.key) == 2  # --reason is required
    assert "--reason" in out_err(capsys)[1]


def test_wounds_fixed_in_the_last_gates_graduate_to_wins(
    seeded: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes = ("--since", "7d", "--source", "shadow", "--wins", "30", "--contested", "0", "--wounds", "30")
    assert cli(seeded, "build", *sizes) == 0
    with Store.open(seeded) as store:
        v1 = store.regsets.get_set("v1")
        assert v1 is not None
        fixed, still_open = sorted(i.key for i in store.regsets.load_items(v1.id) if i.stratum == "wound")[:2]
        for n in range(3):  # three finished gates: one wound fixed in each, the other fixed only in the last
            gate_id = f"gate_{n}"
            store.gates.create_gate(
                GateRecord(
                    id=gate_id,
                    created_at=datetime.now(UTC),
                    status=RunStatus.RUNNING,
                    set_id=v1.id,
                    challenger="b",
                    config={},
                    config_hash=gate_id,
                    n_items=2,
                )
            )
            scores = {fixed: 4.5, still_open: 4.5 if n == 2 else 1.0}
            store.gates.save_gate_items(
                [
                    GateItemRecord(
                        gate_id=gate_id,
                        key=key,
                        stratum="wound",
                        payload={
                            "outcome": ItemOutcome(
                                key=key, stratum="wound", challenger_score=score
                            ).model_dump(mode="json")
                        },
                    )
                    for key, score in scores.items()
                ]
            )
            store.gates.finish_gate(gate_id, "fail", {})
    capsys.readouterr()
    assert cli(seeded, "build", *sizes) == 0
    assert "1 wound(s) graduated to wins" in out_err(capsys)[1]
    assert cli(seeded, "build", *sizes, "--graduate-after", "0") == 0
    with Store.open(seeded) as store:
        v2, v3 = (store.regsets.get_set(v) for v in ("v2", "v3"))
        assert v2 is not None and v3 is not None
        strata = {i.key: i.stratum for i in store.regsets.load_items(v2.id)}
        assert strata[fixed] == "win" and strata[still_open] == "wound"
        assert v2.recipe["graduated"] == [fixed] and v3.recipe["graduated"] == []
        assert {i.key: i.stratum for i in store.regsets.load_items(v3.id)}[fixed] == "wound"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("build", "--since", "last week"), "--since 'last week' is not an age or a date. Fix:"),
        (("build", "--since", "2d", "--until", "3d"), "is not after --since '2d'"),
        (("build", "--until", "soon"), "--until 'soon' is not an age or a date. Fix:"),
        (("build", "--source", "logs"), "--source 'logs': choose shadow, replay or both"),
        (("build", "--wins", "-1"), "--wins -1: a stratum size must be 0 or more. Fix:"),
        (("build", "--wins", "0", "--contested", "0", "--wounds", "0"), "the set would be empty"),
        (("build", "--embedder", "bert"), "--embedder 'bert': choose one of use, e5, hash"),
        (("build", "--redact", "nomodule"), "is not of the form 'module:function'"),
        (("build",), "no question of shadow or replay from"),
        (("show", "v9"), "there is no regression set 'v9': the store holds none yet. Fix:"),
        (("show", "--format", "html"), "--format 'html': choose one of text, md, json"),
        (("diff", "v1", "v2"), "there is no regression set 'v1'"),
        (("export", "latest", "x.jsonl"), "there is no regression set 'latest'"),
        (("pin", "q_x", "--reason", "r"), "there is no regression set yet. Fix: build one"),
    ],
)
def test_user_mistakes_exit_2_with_the_fix(
    store_url: str, args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Store.open(store_url).close()  # an empty store: a missing one is refused before any of these checks
    assert cli(store_url, *args) == 2
    _, err = out_err(capsys)
    assert message in err and "Traceback" not in err


def test_a_real_process_exits_2_without_a_traceback(seeded: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", "regset", "import", str(missing), "--db", seeded],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and f"cannot read {missing}" in done.stderr and "Traceback" not in done.stderr
    built = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", "regset", "build", *SMALL, "--db", seeded],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0 and built.stdout.startswith("built regression set v1")
