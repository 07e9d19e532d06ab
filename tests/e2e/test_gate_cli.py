"""`ragreplay gate` from a real process: every exit code, the reports, resume after SIGKILL without a repeated
call, and the stored history. Targets are fake (canned answers); the judge is the shipped fake model, whose
pairwise rule prefers the answer that repeats more of the question (no contexts here)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from gates import BAD, GOOD, PASSING, make_set, question, targets
from ragreplay.store import Store


def gate(
    store_url: str, champion: Path, challenger: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    args = ["gate", "--champion", str(champion), "--challenger", str(challenger), "--judge", "fake:default"]
    return subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args, "--db", store_url, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_a_clear_pass_exits_0_with_every_report(tmp_path: Path, store_url: str) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    junit, comment = tmp_path / "gate.xml", tmp_path / "comment.md"
    done = gate(
        store_url, champion, challenger, "--format", "json", "--junit", str(junit), "--comment", str(comment)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["decision"] == "pass" and report["exit_code"] == 0
    bars = {b["name"]: b for b in report["verdict"]["bars"]}
    assert (bars["wins"]["k"], bars["wins"]["n"]) == (0, 5)
    assert (bars["contested"]["k"], bars["contested"]["n"]) == (10, 10) and bars["contested"]["low"] > 0.55
    assert (bars["wounds"]["k"], bars["wounds"]["n"]) == (6, 6)
    assert len(report["items"]) == 21 and all(i["error"] is None for i in report["items"])
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0" and suite.get("skipped") == "0"
    assert comment.read_text().startswith("<!-- ragreplay-gate -->") and "PASS" in comment.read_text()
    # stored: re-shown without a call, same decision and exit code; listed in the history
    shown = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", "gate-report", report["gate"]["id"], "--db", store_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "PASS" in shown.stdout
    with Store.open(store_url) as store:
        (stored,) = store.gates.list_gates()
    assert stored.decision == "pass" and stored.status == "done"


def test_one_lost_win_fails_and_is_listed(tmp_path: Path, store_url: str) -> None:
    plan = {**PASSING, "win": [(GOOD, BAD), *PASSING["win"][1:]]}
    champion, challenger = targets(tmp_path, make_set(store_url, plan))
    done = gate(store_url, champion, challenger, "--junit", str(tmp_path / "gate.xml"))
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("FAIL") and "wins lost (1)" in done.stdout
    assert question("win", 0) in done.stdout
    failure = ET.parse(tmp_path / "gate.xml").getroot().find("testcase[@name='wins']/failure")
    assert failure is not None and question("win", 0) in (failure.text or "")


def test_a_contested_share_whose_interval_straddles_is_inconclusive(tmp_path: Path, store_url: str) -> None:
    plan = {**PASSING, "contested": [(BAD, GOOD)] * 7 + [(GOOD, BAD)] * 3}
    champion, challenger = targets(tmp_path, make_set(store_url, plan))
    done = gate(store_url, champion, challenger, "--format", "json")
    assert done.returncode == 2, done.stderr
    bars = {b["name"]: b for b in json.loads(done.stdout)["verdict"]["bars"]}
    assert bars["contested"]["decision"] == "inconclusive" and bars["contested"]["value"] == 0.7
    # the requirement's literal rule decides the same items: 70% > 55%
    point = gate(store_url, champion, challenger, "--rule", "point")
    assert point.returncode == 0, point.stdout + point.stderr


def test_the_local_judge_never_decides_unless_accepted(tmp_path: Path, store_url: str) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    args = [
        "gate",
        "--champion",
        str(champion),
        "--challenger",
        str(challenger),
        "--judge",
        "local",
        "--db",
        store_url,
    ]
    capped = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args], capture_output=True, text=True, timeout=300
    )
    assert capped.returncode == 2, capped.stderr
    assert "--accept-local-judge" in capped.stdout
    # the report says the preference was the local pairwise judge's alone, with its measured dev figures
    shown = " ".join(capped.stdout.split())
    assert "decided only by the local pairwise judge" in shown and "pairwise-pandalm" in shown


def test_what_cannot_run_exits_3(tmp_path: Path, store_url: str) -> None:
    champion, challenger = targets(tmp_path, {"champion": {}, "challenger": {}})
    Store.open(store_url).close()  # an empty store: a missing one is refused (exit 3 too)
    no_set = gate(store_url, champion, challenger)
    assert no_set.returncode == 3 and "regset build" in no_set.stderr and "Traceback" not in no_set.stderr
    make_set(store_url, PASSING)
    bad_policy = tmp_path / "gate.yaml"
    bad_policy.write_text("min_preference: 1.5\nallowed_loses: 1\n")
    refused = gate(store_url, champion, challenger, "--policy", str(bad_policy))
    assert refused.returncode == 3 and "gate.yaml" in refused.stderr and "min_preference" in refused.stderr
    # no policy may let a gate where most items errored pass: asking for it is refused by name
    lax = tmp_path / "lax.yaml"
    lax.write_text("max_error_share: 0.9\n")
    refused = gate(store_url, champion, challenger, "--policy", str(lax))
    assert refused.returncode == 3 and "max_error_share must be under 0.5" in " ".join(refused.stderr.split())
    loosest = tmp_path / "loosest.yaml"
    loosest.write_text("max_error_share: 0.49\n")
    down = tmp_path / "down.yaml"
    down.write_text(
        yaml.safe_dump(
            {
                "name": "down",
                "target": {"kind": "http", "url": "http://127.0.0.1:9/ask", "retries": 0, "timeout_s": 1},
            }
        )
    )
    errored = gate(store_url, champion, down, "--format", "json", "--policy", str(loosest))
    assert errored.returncode == 3, errored.stderr
    report = json.loads(errored.stdout)
    assert report["decision"] == "error" and all(i["error"] for i in report["items"])


def saved_at(store: Store, gate_id: str) -> dict[str, object]:
    """When each of a gate's items was last written."""
    from sqlalchemy import select

    from ragreplay.store.schema import gate_items

    with store._engine.connect() as conn:
        query = select(gate_items.c.key, gate_items.c.updated_at).where(gate_items.c.gate_id == gate_id)
        return {key: at for key, at in conn.execute(query)}


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def test_sigkill_mid_gate_then_resume_repeats_no_call(tmp_path: Path, store_url: str) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    log = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "RAGREPLAY_FAKE_CALL_LOG": str(log),
        "RAGREPLAY_FAKE_LATENCY_MS": "5",
        "COLUMNS": "120",
    }
    args = [
        sys.executable,
        "-m",
        "ragreplay.cli.app",
        "gate",
        "--champion",
        str(champion),
        "--challenger",
        str(challenger),
        "--judge",
        "fake:default",
        "--db",
        store_url,
        "--concurrency",
        "2",
    ]
    # 21 items x 2 orders = 42 judge calls; every call after the 16th hangs, so the kill lands mid-gate
    first = subprocess.Popen(
        args,
        env={**env, "RAGREPLAY_FAKE_HANG_AFTER": "16"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while len(_calls(log)) < 16 and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        time.sleep(0.05)
    time.sleep(0.5)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    with Store.open(store_url) as store:
        (killed,) = store.gates.list_gates()
        saved = len(store.gates.gate_item_keys(killed.id))
        before = saved_at(store, killed.id)
    assert killed.status == "running" and 0 < saved < 21
    second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "resuming gate" in second.stderr
    with Store.open(store_url) as store:
        after = saved_at(store, killed.id)
    # the items saved before the kill were not answered, judged nor written again
    assert {k: after[k] for k in before} == before and len(after) == 21
    keys = Counter(str(c["key"]) for c in _calls(log))
    assert max(keys.values()) == 1, "a model call was repeated after resume"
    # the same calls as an uninterrupted gate: nothing paid twice, nothing skipped (a win both sides answer
    # alike is one request in both orders: the cache answers the second)
    fresh_log, fresh_db = tmp_path / "fresh.jsonl", f"sqlite:///{tmp_path / 'fresh.db'}"
    make_set(fresh_db, PASSING)
    fresh_args = [*args[: args.index("--db")], "--db", fresh_db]
    assert (
        subprocess.run(
            fresh_args, env={**env, "RAGREPLAY_FAKE_CALL_LOG": str(fresh_log)}, timeout=120
        ).returncode
        == 0
    )
    assert set(keys) == {str(c["key"]) for c in _calls(fresh_log)}
    with Store.open(store_url) as store:
        (resumed,) = store.gates.list_gates()
        assert resumed.id == killed.id and resumed.status == "done"
        assert len(store.gates.gate_item_keys(resumed.id)) == 21


def test_an_estimate_over_the_budget_refuses_before_any_call(tmp_path: Path, store_url: str) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    settings = tmp_path / "ragreplay.yaml"
    settings.write_text("prices:\n  fake:default: {input_per_mtok: 2.0, output_per_mtok: 8.0}\n")
    args = ["gate", "--champion", str(champion), "--challenger", str(challenger), "--db", store_url]
    priced = [*args, "--judge", "fake:default", "--config", str(settings), "--budget", "0.01"]
    refused = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *priced], capture_output=True, text=True, timeout=60
    )
    # 21 items x 2 orders x (1500 + 250 assumed tokens) at $2/$8 per million: about $0.21
    assert refused.returncode == 3, refused.stderr
    assert "42 judge calls" in refused.stderr and "$0.21" in refused.stderr and "--budget" in refused.stderr
    with Store.open(store_url) as store:
        (stopped,) = store.gates.list_gates()
        assert stopped.status == "interrupted" and store.gates.gate_item_keys(stopped.id) == set()
    # at its real price (free) the fake judge is under any budget; its measured tokens feed the next estimate
    free = gate(store_url, champion, challenger, "--budget", "0")
    assert free.returncode == 0 and "estimate: 21 items" in free.stderr
    again = gate(store_url, champion, challenger, "--fresh")
    assert "measured over" in again.stderr


def test_until_decided_draws_from_the_pool_until_the_wounds_bar_decides(
    tmp_path: Path, store_url: str
) -> None:
    import hashlib
    from datetime import datetime as dt

    from ragreplay.regset.build import TokenHashEmbedder, build_regset
    from regset_data import PRODUCTION_LOG, REPLAY_SINCE, REPLAY_UNTIL, demo_questions, ingest_production

    assert PRODUCTION_LOG.exists()
    with Store.open(store_url) as store:
        ingest_production(store)
        since, until = (dt.fromisoformat(d + "T00:00:00+00:00") for d in (REPLAY_SINCE, REPLAY_UNTIL))
        built = build_regset(
            store,
            since,
            until,
            {"win": 4, "contested": 0, "wound": 8},
            seed=3,
            sources=("replay",),
            embed_with=TokenHashEmbedder(),
        )
    assert built.record.counts["wound"] == 8
    # the challenger fixes about 70% of the disliked questions: clear over one third, but not in 8 questions
    fixed = {q for q in demo_questions() if hashlib.sha256(q.encode()).digest()[0] < 180}
    answers = {
        "champion": {q: "zzz" for q in demo_questions()},
        "challenger": {q: (q if q in fixed else "zzz") for q in demo_questions()},
    }
    champion, challenger = targets(tmp_path, answers)
    once = gate(store_url, champion, challenger, "--format", "json")
    bars = {b["name"]: b for b in json.loads(once.stdout)["verdict"]["bars"]}
    assert bars["wounds"]["decision"] == "inconclusive" and bars["wounds"]["n"] == 8
    looked = gate(
        store_url, champion, challenger, "--fresh", "--until-decided", "--step", "20", "--format", "json"
    )
    report = json.loads(looked.stdout)
    bars = {b["name"]: b for b in report["verdict"]["bars"]}
    assert bars["wounds"]["decision"] != "inconclusive", bars["wounds"]
    assert bars["wounds"]["n"] in (28, 48, 68)  # 8, then 20 more per look
    assert report["policy"]["confidence"] == pytest.approx(1 - 0.05 / 4)  # every look at 98.75%
    # the set has no contested questions (replay logs give none): that bar stays inconclusive, so the gate does
    assert bars["contested"]["n"] == 0 and looked.returncode == report["exit_code"] == 2, looked.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", "gate-report", report["gate"]["id"], "--db", store_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "until decided" in shown.stdout and shown.returncode == looked.returncode


def test_gate_report_mistakes_exit_3_never_2(tmp_path: Path, store_url: str) -> None:
    for extra in (["gate_nope"], ["gate_nope", "--format", "xml"]):
        done = subprocess.run(
            [sys.executable, "-m", "ragreplay.cli.app", "gate-report", *extra, "--db", store_url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 3 and "Traceback" not in done.stderr, extra
