"""`ragreplay shadow judge` / `shadow report` on SQLite and PostgreSQL: incremental judging, stored judgments,
the report grid in every format, and ``--since`` windows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from builders import make_shadow_row
from ragreplay.cli.app import main
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.errors import ConfigError
from ragreplay.shadow.judging import parse_since
from ragreplay.store import Store

NOW = datetime.now(UTC)
QUESTION = "how many leave days do employees get"


def row(
    rid: str,
    champion: str,
    candidate: str,
    age: timedelta = timedelta(hours=1),
    error: str | None = None,
    challenger: str = "b",
    dept: str = "hr",
) -> ShadowRow:
    return make_shadow_row(
        id=rid,
        ts=NOW - age,
        request_id=f"req-{rid}",
        query=QUESTION,
        tags={"dept": dept},
        challenger=challenger,
        champion_answer=ShadowAnswer(text=champion, latency_ms=100.0, cost_usd=0.001),
        challenger_answer=ShadowAnswer(text=candidate, latency_ms=150.0, cost_usd=0.003, error=error),
    )


def first_rows() -> list[ShadowRow]:
    same = "employees get 25 leave days"
    return [
        row("r1", same, same),  # FIT, tie
        row("r2", "no idea sorry", "employees get many leave days every year"),  # NO_FIT, candidate wins
        row("r3", "employees get 30 leave days per year", "please call someone", dept="it"),  # champion wins
        row("r4", same, "", error="TimeoutError: 30 s"),  # a failed side: recorded, not judged
        row("r5", same, "[[unparseable]] employees"),  # the judges cannot score it
        row("old", same, "nothing", age=timedelta(days=10)),  # outside --since 7d
    ]


def judge(url: str, *extra: str) -> int:
    return main(["shadow", "judge", "--db", url, "--judge", "fake:default", *extra])


def report_json(url: str, capsys: pytest.CaptureFixture[str], since: str = "7d") -> dict[str, Any]:
    capsys.readouterr()
    assert main(["shadow", "report", "--db", url, "--since", since, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


def test_judge_is_incremental_and_stores_each_outcome(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.shadow_rows.write_shadow_rows(first_rows())
    assert judge(store_url, "--since", "7d") == 0
    assert "judged 5 shadow row(s)" in capsys.readouterr().err
    judged = {rec.row_id: rec for _, rec in store.shadow_judgments.load_shadow_judgments()}
    assert set(judged) == {"r1", "r2", "r3", "r4", "r5"}
    assert store.shadow_judgments.count_unjudged_shadow_rows() == 1  # the old row
    assert (judged["r1"].fit, judged["r1"].winner, judged["r1"].consistent) == (Fit.FIT, "tie", True)
    assert (judged["r2"].fit, judged["r2"].winner) == (Fit.NO_FIT, "y")
    assert (judged["r3"].fit, judged["r3"].winner) == (Fit.NO_FIT, "x")
    assert judged["r4"].error is not None and "TimeoutError" in judged["r4"].error
    assert (judged["r5"].fit, judged["r5"].winner) == (Fit.UNSCORABLE, None)
    assert "fake:default" in judged["r2"].judge and judged["r2"].judge_prompt_version
    assert judged["r2"].payload["outcome"]["mode"] == "both"

    assert judge(store_url, "--since", "7d") == 0  # nothing new: nothing judged again
    assert "judged 0 shadow row(s)" in capsys.readouterr().err
    again = {rec.row_id: rec for _, rec in store.shadow_judgments.load_shadow_judgments()}
    assert again == judged

    store.shadow_rows.write_shadow_rows(
        [row("r6", "x y z", "employees get leave days"), row("r7", "a", "b", challenger="c")]
    )
    assert judge(store_url, "--since", "7d") == 0
    assert "judged 2 shadow row(s)" in capsys.readouterr().err
    third = {rec.row_id: rec for _, rec in store.shadow_judgments.load_shadow_judgments()}
    assert set(third) - set(judged) == {"r6", "r7"}
    assert all(third[k] == judged[k] for k in judged)  # earlier judgments untouched

    assert judge(store_url, "--since", "30d", "--limit", "5") == 0
    assert "judged 1 shadow row(s)" in capsys.readouterr().err
    assert store.shadow_judgments.count_unjudged_shadow_rows() == 0


def test_report_grid_matches_the_judgments_in_every_format(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.shadow_rows.write_shadow_rows(first_rows())
    assert judge(store_url, "--since", "30d") == 0
    data = report_json(store_url, capsys)
    (b,) = data["challengers"]
    assert b["name"] == "b"
    assert b["n_cases"] == 5 and b["n_errors"] == 1
    assert (b["agreement"]["k"], b["agreement"]["n"]) == (1, 3)  # r1 FIT of r1, r2, r3 (r5 unscorable)
    assert b["agreement_unscorable"] == 1
    pref = b["preference_disagreements"]
    assert (pref["challenger_wins"], pref["champion_wins"], pref["ties"]) == (1, 1, 0)
    assert 0 <= pref["low"] <= 0.5 <= pref["high"] <= 1
    assert b["preference_all"]["ties"] == 1
    assert b["preference_unscorable"] == 1
    assert b["position"]["consistent"] == 3 and b["position"]["n_pairs"] == 4
    assert b["latency"]["delta_p50"] == pytest.approx(50.0)
    assert b["cost"]["delta_usd"] == pytest.approx(5 * 0.002)
    assert {(t["tag"], t["value"], t["n"]) for t in b["by_tag"]} == {("dept", "hr", 3), ("dept", "it", 1)}
    assert data["n_cases"] == 5 and len(data["rows"]) == 5

    wide = report_json(store_url, capsys, since="30d")  # the old row is in the 30d window
    assert wide["n_cases"] == 6 and len(wide["rows"]) == 6
    assert report_json(store_url, capsys, since="30m")["n_cases"] == 0

    for fmt in ("text", "md"):
        assert main(["shadow", "report", "--db", store_url, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "agreement (FIT)" in out and "order consistency" in out
        assert "1/3" in out  # the same agreement count as the JSON
        assert "+50 ms" in out.replace("+50.0 ms", "+50 ms")
        assert "users rated" not in out  # no live feedback stored: no feedback rows
    assert b["feedback"] is None


def test_report_adds_the_verdict_matrix_where_users_rated_the_champion(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.shadow_rows.write_shadow_rows(first_rows())
    assert judge(store_url, "--since", "30d") == 0
    labels = {"r1": Feedback.GOOD, "r2": Feedback.BAD, "r3": Feedback.GOOD, "r4": Feedback.BAD}
    labels |= {"r5": Feedback.BAD, "nowhere": Feedback.BAD}  # a label without a shadow row is left out
    store.shadow_feedback.write_shadow_feedback(
        [ShadowFeedback(request_id=f"req-{k}", feedback=v, ts=NOW) for k, v in labels.items()]
    )
    fb = report_json(store_url, capsys)["challengers"][0]["feedback"]
    # r4 failed on a side: left out like every errored row; r5 is rated but its agreement is unscorable
    assert (fb["n_good"], fb["n_bad"], fb["unscorable"]) == (2, 2, 1)
    counts = fb["verdicts"]["counts"]
    assert counts == {"GOOD_FIT": 1, "GOOD_NO_FIT": 1, "BAD_FIT": 0, "BAD_NO_FIT": 1}
    assert (fb["verdicts"]["good_maintenance"]["k"], fb["verdicts"]["good_maintenance"]["n"]) == (1, 2)
    assert (fb["verdicts"]["bad_change"]["k"], fb["verdicts"]["bad_change"]["n"]) == (1, 1)
    bad, good = fb["preference_bad"], fb["preference_good"]
    assert (bad["challenger_wins"], bad["champion_wins"], bad["ties"]) == (1, 0, 0)
    assert (good["challenger_wins"], good["champion_wins"], good["ties"]) == (0, 1, 1)
    for fmt in ("text", "md"):
        assert main(["shadow", "report", "--db", store_url, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "users rated champion good / bad" in out and "2 / 2" in out
        assert "BAD_NO_FIT" in out and "GOOD_FIT" in out


def test_local_judge_and_random_order(
    store: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.shadow_rows.write_shadow_rows(first_rows())
    args = ["shadow", "judge", "--db", store_url, "--judge", "local", "--order", "random", "--seed", "3"]
    assert main(args) == 0
    records = [rec for _, rec in store.shadow_judgments.load_shadow_judgments()]
    assert len(records) == 5
    assert all(r.consistent is None for r in records if r.error is None)
    assert {r.judge for r in records} != {""}
    data = report_json(store_url, capsys)
    assert data["order"] == "random"
    assert any("single random order" in w for w in data["warnings"])


def test_user_mistakes_exit_2_with_a_fix(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shadow", "judge", "--db", store_url, "--since", "last week"]) == 2
    assert "Fix: use e.g. 7d" in capsys.readouterr().err
    assert main(["shadow", "judge", "--db", store_url, "--order", "sideways"]) == 2
    assert main(["shadow", "report", "--db", store_url, "--format", "pdf"]) == 2
    Store.open(store_url).close()  # an empty store: a missing one is refused (exit 2)
    assert main(["shadow", "report", "--db", store_url]) == 0
    assert "run `ragreplay shadow judge" in capsys.readouterr().err


def test_parse_since() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("24h", now) == now - timedelta(hours=24)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    assert parse_since("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=UTC)
    with pytest.raises(ConfigError):
        parse_since("7 weeks", now)
