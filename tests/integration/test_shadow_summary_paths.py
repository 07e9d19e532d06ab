"""The shadow report's figures are the same whichever way they are built: the faster store read and summary give
what the validated row readers and the summary as it was before gave (every number, every row), and the
figures-only path gives the same numbers with rows stripped of their texts. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from builders import make_shadow_row
from ragreplay.cli.app import main
from ragreplay.compare.checks import expected_language, is_wrong_language
from ragreplay.compare.grid import ComparisonSummary, build_summary
from ragreplay.core.compare_stats import CompareRow
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Feedback, TokenUsage
from ragreplay.judges.position import PairOutcome
from ragreplay.shadow.judging import shadow_figures, stored_shadow_summary
from ragreplay.store import Store

NOW = datetime.now(UTC)
START = NOW - timedelta(days=7)
SAME = "employees get 25 leave days"
DUTCH = "medewerkers krijgen 25 verlofdagen per jaar en de regeling is van de afdeling"
# (champion answer, challenger answer): with the fake judge FIT/tie, NO_FIT/challenger, NO_FIT/champion,
# UNSCORABLE, and a Dutch answer to an English question (wrong language)
PAIRS = [
    (SAME, SAME),
    ("no idea sorry", "employees get many leave days every year"),
    ("employees get 30 leave days per year", "please call someone"),
    (SAME, "[[unparseable]] employees"),
    (SAME, DUTCH),
]
QUESTIONS = [
    "how many leave days do employees get",
    "hoeveel verlofdagen krijgen de medewerkers van het bedrijf",
]


def make_row(i: int, challenger: str, hours: float) -> ShadowRow:
    champion, candidate = PAIRS[i % len(PAIRS)]
    chunks = i % len(PAIRS) == len(PAIRS) - 1  # chunk ids change what the fake pairwise judge compares
    tags = {"dept": ["hr", "it", "fin"][i % 3]}
    if i % 4 == 0:
        tags["language"] = "nl"
    return make_shadow_row(
        id=f"r{i:03d}{challenger}",
        ts=NOW - timedelta(hours=hours),
        request_id=f"req-{i}",  # both challengers' rows of a request share it (and the champion's answer)
        query=QUESTIONS[i % 2],
        user_hash=None if i % 2 else f"user{i % 5}",
        tags=tags,
        challenger=challenger,
        champion_answer=ShadowAnswer(
            text=champion, chunk_ids=[f"doc{i}#1"] if chunks else [], latency_ms=90.0 + i, cost_usd=0.001
        ),
        challenger_answer=ShadowAnswer(
            text=candidate,
            chunk_ids=[f"doc{i}#2", f"doc{i}#3"] if chunks else [],
            tokens=TokenUsage(input=10 + i, output=i),
            latency_ms=None if i % 7 == 0 else 150.0 + 2 * i,
            cost_usd=0.002 + i / 1e5,
            error="TimeoutError: 30 s" if i % 11 == 5 else None,
        ),
    )


@pytest.fixture
def judged(store: Store, store_url: str) -> Store:
    """60 requests shadowed to two challengers, judged in both orders and (the newer ones) in random order,
    some rows outside the window, feedback on some requests."""
    store.shadow_rows.write_shadow_rows([make_row(i, c, 2.5 * i) for i in range(40) for c in ("b", "c")])
    store.shadow_rows.write_shadow_rows(
        [make_row(i, "b", 24 * 9 + i) for i in range(40, 44)]
    )  # outside the window
    judge = ["shadow", "judge", "--db", store_url, "--judge", "fake:default", "--since", "30d"]
    assert main(judge) == 0
    store.shadow_rows.write_shadow_rows(
        [make_row(i, c, 0.1 * (i - 43)) for i in range(44, 60) for c in ("b", "c")]
    )
    assert main([*judge, "--order", "random", "--seed", "7"]) == 0
    labels = {f"req-{i}": Feedback.GOOD if i % 3 else Feedback.BAD for i in range(0, 60, 4)}
    labels["req-41"] = Feedback.BAD  # a request outside the window
    store.shadow_feedback.write_shadow_feedback(
        [ShadowFeedback(request_id=rid, feedback=label, ts=NOW) for rid, label in labels.items()]
    )
    return store


def reference_load(store: Store, since: datetime) -> list[tuple[ShadowRow, ShadowJudgmentRecord]]:
    """The judged rows of the window through the store's validating row readers, one row at a time."""
    out = []
    for row in store.shadow_rows.iter_shadow_rows(since=since):
        found = store.shadow_browse.shadow_row_with_judgment(row.id)
        assert found is not None
        if found[1] is not None:
            out.append((found[0], found[1]))
    return out


def reference_summary(
    judged: Sequence[tuple[ShadowRow, ShadowJudgmentRecord]], label: str, feedback: Mapping[str, Feedback]
) -> ComparisonSummary:
    """``shadow_summary`` as it was before it was made faster (each row checked and validated afresh)."""
    preferred: dict[str, Any] = {"x": "champion", "y": "challenger", "tie": "tie"}
    rows = []
    for row, record in judged:
        expected = expected_language(row.query, row.tags)
        rows.append(
            CompareRow(
                case_id=row.id,
                challenger=row.challenger,
                question=row.query,
                tags=dict(row.tags),
                champion_answer=row.champion_answer.text,
                challenger_answer=row.challenger_answer.text,
                agreement=record.fit,
                preference=None if record.winner is None else preferred[record.winner],
                consistent=record.consistent,
                champion_latency_ms=row.champion_answer.latency_ms,
                challenger_latency_ms=row.challenger_answer.latency_ms,
                champion_cost_usd=row.champion_answer.cost_usd,
                challenger_cost_usd=row.challenger_answer.cost_usd,
                champion_wrong_language=is_wrong_language(row.champion_answer.text, expected),
                challenger_wrong_language=is_wrong_language(row.challenger_answer.text, expected),
                error=record.error,
                reason=str(record.payload.get("reason", "")),
                feedback=feedback.get(row.request_id),
            )
        )
    outcomes: dict[str, list[PairOutcome]] = {}
    for _, record in judged:
        if record.payload.get("outcome") is not None:
            outcome = PairOutcome.model_validate(record.payload["outcome"])
            outcomes.setdefault(record.challenger, []).append(outcome)
    records = [r for _, r in judged]
    orders = {str(r.payload.get("order", "both")) for r in records}
    specs = [s for r in records for s in r.payload.get("judge_specs", []) if s]
    return build_summary(
        champion="champion",
        challenger_names=sorted({r.challenger for r in records}),
        rows=rows,
        outcomes=outcomes,
        judge=", ".join(dict.fromkeys(r.judge for r in records)) or "-",
        judge_prompt_version=", ".join(dict.fromkeys(r.judge_prompt_version for r in records)) or "-",
        fit_judge=", ".join(dict.fromkeys(r.fit_judge for r in records)) or "-",
        order="random" if "random" in orders else "both",
        cases=label,
        n_cases=len({row.request_id for row, _ in judged}),
        judge_specs=list(dict.fromkeys(specs)) or None,
    )


def test_the_store_reads_the_same_rows_and_judgments_as_the_validating_readers(judged: Store) -> None:
    expected = reference_load(judged, START)
    assert len(expected) == 2 * 40 + 2 * 16
    assert judged.shadow_judgments.load_shadow_judgments(START) == expected
    assert list(judged.shadow_judgments.iter_shadow_judgments(START)) == expected
    assert len(judged.shadow_judgments.load_shadow_judgments()) == len(expected) + 4
    first_row, first_record = expected[0]
    assert first_row.ts.tzinfo is not None and first_record.judged_at.tzinfo is not None


def test_the_summary_and_the_json_report_are_what_they_were(
    judged: Store, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = reference_load(judged, START)
    feedback = {
        k: v.feedback
        for k, v in judged.shadow_feedback.shadow_feedback_for(r.request_id for r, _ in rows).items()
    }
    label = f"shadow rows since {START:%Y-%m-%d %H:%M} UTC"
    expected = reference_summary(rows, label, feedback)
    summary = stored_shadow_summary(judged, START)
    assert summary.model_dump(mode="json") == expected.model_dump(mode="json")
    # the case is not trivial: every part of the grid has something to show
    assert summary.order == "random" and len(summary.challengers) == 2
    assert all(s.position is not None and s.feedback is not None and s.n_errors for s in summary.challengers)
    assert sum(s.challenger_wrong_language for s in summary.challengers) > 0
    assert {r.preference for r in summary.rows} == {"champion", "challenger", "tie", None}
    capsys.readouterr()
    assert (
        main(["shadow", "report", "--db", store_url, "--since", START.isoformat(), "--format", "json"]) == 0
    )
    no_reviews = {s.name: FailureTags().model_dump() for s in summary.challengers}  # the report looks them up
    report = json.loads(capsys.readouterr().out)
    # the report's figures come from the rollups: every count the same, the latency quantiles from sketches
    # (within 1%: tests/integration/test_shadow_rollups.py), and the rows streamed in after them
    reference = {**expected.model_dump(mode="json"), "failure_tags": no_reviews, "judge_notes": []}
    for data in (report, reference):
        for c in data["challengers"]:
            latency = c.pop("latency")
            c.pop("spreads", None)
            assert set(latency) == {"champion_p50", "champion_p95", "challenger_p50", "challenger_p95"} | {
                "delta_p50",
                "delta_p95",
            }
    assert report == reference


def test_the_figures_only_path_gives_every_number_of_the_report(judged: Store) -> None:
    full = stored_shadow_summary(judged, START)
    figures = shadow_figures(judged, START, f"shadow rows since {START:%Y-%m-%d %H:%M} UTC")
    assert figures.model_dump(exclude={"rows"}) == full.model_dump(exclude={"rows"})
    blank = {"question": "", "champion_answer": "", "challenger_answer": "", "reason": ""}
    assert figures.rows == [r.model_copy(update=blank) for r in full.rows]
    assert any(r.feedback is not None for r in figures.rows)
    assert any(r.question for r in full.rows) and any(r.reason for r in full.rows)


def test_the_benchmark_times_the_report_and_the_figures(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "dashboard_pages.py"
    args = [
        sys.executable,
        str(script),
        "--db",
        str(tmp_path / "b.db"),
        "--rows",
        "200",
        "--reps",
        "1",
        "--report",
    ]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout)
    for key in ("shadow report --since 7d --format json", "figures only (shadow_figures)"):
        assert result[key]["s"] > 0 and 20 < result[key]["peak_rss_mb"] < 2000
