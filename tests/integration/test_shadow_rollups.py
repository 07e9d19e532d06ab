"""The shadow rollups against a full scan, on random data written as the shadow writes it (rows, judgments in
batches, feedback before and after judging, labels changed, judgments replaced, a purge): every count of the
report and of the per-day table equals the full scan's exactly, dollars to the last digit, latency quantiles
within the sketch's 1%. On SQLite and PostgreSQL."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

import pytest

from builders import make_shadow_row
from ragreplay.core.compare_stats import ChallengerSummary
from ragreplay.core.pairwise import PairwiseJudgment
from ragreplay.core.run_summary import percentile
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.shadow_rollup import RELATIVE_ACCURACY, Rollup, Sketch
from ragreplay.core.types import Feedback, Fit
from ragreplay.judges.position import PairOutcome
from ragreplay.shadow.judging import shadow_summary, stored_shadow_summary, wrong_language
from ragreplay.shadow.rollup_summary import rollup_figures
from ragreplay.store import Store

NOW = datetime(2026, 3, 10, 12, 34, 56, 789000, tzinfo=UTC)
TEXTS = [
    "employees get 25 leave days",
    "medewerkers krijgen 25 verlofdagen per jaar en de regeling is van de afdeling",
    "please ask your manager about the policy for the leave days",
    "",
]
QUESTIONS = [
    "how many leave days do employees get",
    "hoeveel verlofdagen krijgen de medewerkers van het bedrijf",
]


def _outcome(rng: random.Random) -> PairOutcome:
    mode = rng.choice(["both", "both", "random"])
    orders = ["xy", "yx"] if mode == "both" else [rng.choice(["xy", "yx"])]
    judgments = []
    for o in orders:
        judgments.append(
            (
                o,
                PairwiseJudgment(
                    winner=rng.choice(["A", "B", "tie", None]),
                    scores_a=None,
                    scores_b=None,
                    reason="because",
                    judge="fake",
                    prompt_version="p1",
                ),
            )
        )
    winner = rng.choice(["x", "y", "tie", None])
    consistent = None if winner is None else rng.choice([True, False])
    return PairOutcome(
        winner=cast(Literal["x", "y", "tie"] | None, winner),
        consistent=consistent,
        judgments=cast(Any, judgments),
        mode=cast(Literal["both", "random"], mode),
    )


def _row(rng: random.Random, i: int, request: int, challenger: str, ts: datetime) -> ShadowRow:
    def side(error: bool) -> ShadowAnswer:
        return ShadowAnswer(
            text=rng.choice(TEXTS),
            latency_ms=None if rng.random() < 0.1 else round(rng.lognormvariate(5, 1), 3),
            cost_usd=rng.choice([0.0, rng.random() / 300, 1e-7 * rng.random()]),
            unpriced_calls=rng.choice([0, 0, 0, 1, 2]),
            error="TimeoutError: 30 s" if error else None,
        )

    tags = {"dept": rng.choice(["hr", "it", "fin"])}
    if rng.random() < 0.5:
        tags["language"] = rng.choice(["nl", "en", "xx"])
    return make_shadow_row(
        id=f"row{i:05d}",
        ts=ts,
        request_id=f"req{request}",
        query=rng.choice(QUESTIONS),
        tags=tags,
        challenger=challenger,
        champion_answer=side(False),
        challenger_answer=side(rng.random() < 0.08),
    )


def _judgment(rng: random.Random, row: ShadowRow, judge: str) -> ShadowJudgmentRecord:
    failed = row.challenger_answer.error is not None
    payload: dict[str, Any] = {
        "order": rng.choice(["both", "both", "random"]),
        "judge_specs": [judge, "fit:1"],
    }
    if failed:
        return ShadowJudgmentRecord(
            row_id=row.id,
            challenger=row.challenger,
            judged_at=NOW,
            judge=judge,
            judge_prompt_version="p1",
            fit_judge="fit",
            fit_judge_prompt_version="f1",
            error="challenger failed",
            payload=payload,
        )
    if rng.random() < 0.6:  # judged with the language check; the others are caught up by the report
        payload["wrong_language"] = list(wrong_language(row))
    outcome = _outcome(rng) if rng.random() < 0.9 else None
    if outcome is not None:
        payload["outcome"] = outcome.model_dump(mode="json")
    return ShadowJudgmentRecord(
        row_id=row.id,
        challenger=row.challenger,
        judged_at=NOW,
        fit=rng.choice([Fit.FIT, Fit.NO_FIT, Fit.NO_FIT, Fit.UNSCORABLE, None]),
        winner=None if outcome is None else outcome.winner,
        consistent=None if outcome is None else outcome.consistent,
        judge=judge,
        judge_prompt_version=rng.choice(["p1", "p2"]),
        fit_judge="fit",
        fit_judge_prompt_version="f1",
        payload=payload,
    )


def _label(rng: random.Random, request: int, ts: datetime) -> ShadowFeedback:
    return ShadowFeedback(request_id=f"req{request}", feedback=rng.choice(list(Feedback)), ts=ts)


def fill(store: Store, seed: int, n_requests: int = 160) -> list[ShadowRow]:
    """Random shadow traffic over 3 days, written and judged the way the shadow does it, in steps."""
    rng = random.Random(seed)
    rows: list[ShadowRow] = []
    i = 0
    for request in range(n_requests):
        ts = NOW - timedelta(seconds=rng.uniform(0, 3 * 86400))
        for challenger in rng.sample(["b", "c", "d"], rng.randint(1, 3)):
            # most rows of a request share its time; some land minutes (or an hour) apart
            jitter = timedelta(minutes=rng.choice([0, 0, 0, 7, 65]))
            rows.append(_row(rng, i, request, challenger, ts + jitter))
            i += 1
    rng.shuffle(rows)
    half = len(rows) // 2
    store.shadow_rows.write_shadow_rows(rows[:half])
    store.shadow_feedback.write_shadow_feedback(
        [_label(rng, r, NOW - timedelta(days=4)) for r in range(0, n_requests, 5)]
    )
    judges = ["judge-a", "judge-b"]
    for start in range(0, half, 17):
        store.shadow_judgments.save_shadow_judgments(
            [_judgment(rng, row, rng.choice(judges)) for row in rows[start : start + 17]]
        )
    store.shadow_rows.write_shadow_rows(rows[half:])
    # labels: new ones, changed ones, and older ones that must change nothing
    store.shadow_feedback.write_shadow_feedback(
        [_label(rng, r, NOW - timedelta(days=rng.choice([1, 5]))) for r in range(0, n_requests, 3)]
    )
    for start in range(half, len(rows) - 20, 23):
        store.shadow_judgments.save_shadow_judgments(
            [_judgment(rng, row, rng.choice(judges)) for row in rows[start : start + 23]]
        )
    # judged again: replaced judgments (some turn errors into answers' outcomes and back)
    store.shadow_judgments.save_shadow_judgments([_judgment(rng, row, "judge-c") for row in rows[:30]])
    store.shadow_feedback.write_shadow_feedback(
        [_label(rng, r, NOW - timedelta(hours=2)) for r in range(1, n_requests, 4)]
    )
    return rows


def _without(s: ChallengerSummary) -> dict[str, Any]:
    data = s.model_dump(mode="json")
    for key in ("latency", "spreads"):
        data.pop(key)
    return data


def _check_quantile(got: float | None, values: list[float], q: float) -> None:
    if not values:
        assert got is None
        return
    ordered = sorted(values)
    exact = percentile(ordered, q * 100)
    assert exact is not None and got is not None
    low = ordered[int((len(ordered) - 1) * q)]  # the value at the quantile's rank (DDSketch's guarantee)
    assert abs(got - low) <= RELATIVE_ACCURACY * abs(low) + 1e-9, (got, low, exact)


def assert_same_as_full_scan(store: Store, start: datetime) -> None:
    """The rollups' figures for ``ts >= start`` against the full scan of the rows."""
    figures = rollup_figures(store, start)
    scan = stored_shadow_summary(store, start)
    got = figures.summary
    assert got.n_cases == scan.n_cases
    assert [s.name for s in got.challengers] == [s.name for s in scan.challengers]
    for mine, theirs in zip(got.challengers, scan.challengers, strict=True):
        assert _without(mine) == _without(theirs)
        rows = [r for r in scan.rows if r.challenger == mine.name and r.error is None]
        champ = [r.champion_latency_ms for r in rows if r.champion_latency_ms is not None]
        chall = [r.challenger_latency_ms for r in rows if r.challenger_latency_ms is not None]
        for value, values, q in (
            (mine.latency.champion_p50, champ, 0.5),
            (mine.latency.champion_p95, champ, 0.95),
            (mine.latency.challenger_p50, chall, 0.5),
            (mine.latency.challenger_p95, chall, 0.95),
        ):
            _check_quantile(value, values, q)
        assert mine.spreads is not None
        assert mine.spreads.champion_latency.n == len(champ)
        assert mine.spreads.champion_cost.n == mine.n_cases
    for field in ("judge", "judge_prompt_version", "fit_judge", "order", "warnings"):
        assert getattr(got, field) == getattr(scan, field), field
    assert figures.days == store.shadow_browse.shadow_daily_figures(start)


STARTS = [
    NOW - timedelta(days=10),  # everything
    NOW - timedelta(days=2, minutes=17, seconds=3),  # mid-hour: the edge hour read from the rows
    (NOW - timedelta(days=1)).replace(minute=0, second=0, microsecond=0),  # on an hour
    NOW - timedelta(hours=5, microseconds=1),
    NOW + timedelta(days=1),  # nothing
]


@pytest.mark.parametrize("seed", [1, 2])
def test_rollups_equal_a_full_scan(store: Store, seed: int) -> None:
    fill(store, seed)
    for start in STARTS:
        assert_same_as_full_scan(store, start)


def test_purge_keeps_rollups_right(store: Store) -> None:
    fill(store, 3)
    cutoff = NOW - timedelta(days=1, hours=7, minutes=41, seconds=12)
    done = store.shadow_purge.purge_shadow_before(cutoff)
    assert done.rows > 0
    for start in [NOW - timedelta(days=10), cutoff, cutoff + timedelta(minutes=5), NOW - timedelta(hours=9)]:
        assert_same_as_full_scan(store, start)
    # after a purge on an hour boundary too
    store.shadow_purge.purge_shadow_before(
        (NOW - timedelta(hours=20)).replace(minute=0, second=0, microsecond=0)
    )
    assert_same_as_full_scan(store, NOW - timedelta(days=10))


def test_incremental_rollups_equal_a_rebuild(store: Store) -> None:
    """What the writers kept, hour by hour, equals the rollups rebuilt from the rows (the migration's
    backfill)."""
    fill(store, 4)
    rollup_figures(store, NOW - timedelta(days=10))  # saves the language checks it catches up

    def table() -> dict[tuple[datetime, str], dict[str, Any]]:
        from sqlalchemy import select

        from ragreplay.store.schema import shadow_rollup_requests, shadow_rollups

        with store._engine.connect() as conn:
            kept = {
                (h, ch): _normal(Rollup.from_json(__import__("json").loads(d)))
                for h, ch, d in conn.execute(select(shadow_rollups))
            }
            kept.update(
                {(h, "*requests"): {"n": n} for h, n in conn.execute(select(shadow_rollup_requests)) if n}
            )
        return kept

    before = table()
    store.shadow_rollups.rebuild()
    assert table() == before


def _normal(r: Rollup) -> dict[str, Any]:
    data = r.to_json()
    data["c"] = {k: v for k, v in data["c"].items() if v}
    data["t"] = {
        k: {v: {n: c for n, c in cs.items() if c} for v, cs in vs.items() if any(cs.values())}
        for k, vs in data["t"].items()
    }
    data["t"] = {k: vs for k, vs in data["t"].items() if vs}
    return data


def test_sketch_round_trip_and_accuracy() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(4, 2) for _ in range(5000)] + [0.0] * 20
    a, b = Sketch(), Sketch()
    for i, v in enumerate(values):
        (a if i % 2 else b).add(v)
    a.merge(Sketch.from_json(b.to_json()))
    assert a.n == len(values) and a.lo == min(values) and a.hi == max(values)
    for q in (0.01, 0.25, 0.5, 0.9, 0.95, 0.99):
        _check_quantile(a.quantiles([q])[0], values, q)
    assert Sketch().quantiles([0.5]) == [None]


def test_the_old_summary_and_the_scan_agree_on_dollars(store: Store) -> None:
    """Dollars are added exactly (fractions) in the rollups and correctly rounded (fsum) in the scan."""
    rows = fill(store, 5, n_requests=40)
    scan = shadow_summary(store.shadow_judgments.load_shadow_judgments(None), "all")
    got = rollup_figures(store, NOW - timedelta(days=30)).summary
    for mine, theirs in zip(got.challengers, scan.challengers, strict=True):
        assert mine.cost == theirs.cost
    assert rows


def test_concurrent_writers_count_each_request_once(store: Store, store_url: str) -> None:
    """Two judging processes (each its own store connection) judge the two challengers' rows of the same
    requests at once while labels change: each request counted once, each label where it belongs."""
    rng = random.Random(11)
    ts = NOW - timedelta(hours=3)
    rows = [
        _row(rng, 2 * request + k, request, challenger, ts + timedelta(minutes=70 * k))
        for request in range(60)
        for k, challenger in enumerate(["b", "c"])
    ]
    store.shadow_rows.write_shadow_rows(rows)
    records = {row.id: _judgment(rng, row, "judge-a") for row in rows}
    labels = [[_label(rng, r, NOW - timedelta(minutes=m)) for r in range(60)] for m in (50, 40, 30)]

    def judge(challenger: str) -> None:
        with Store.open(store_url) as mine:
            mine_rows = [r for r in rows if r.challenger == challenger]
            for i in range(0, len(mine_rows), 3):
                mine.shadow_judgments.save_shadow_judgments([records[r.id] for r in mine_rows[i : i + 3]])

    def label() -> None:
        with Store.open(store_url) as mine:
            for batch in labels:
                for i in range(0, len(batch), 7):
                    mine.shadow_feedback.write_shadow_feedback(batch[i : i + 7])

    threads = [threading.Thread(target=judge, args=(c,)) for c in ("b", "c")] + [
        threading.Thread(target=label)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert_same_as_full_scan(store, NOW - timedelta(days=1))
