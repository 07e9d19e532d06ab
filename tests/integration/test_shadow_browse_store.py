"""Browsing the judged shadow log (the dashboard's queries) on SQLite and PostgreSQL: keyset pages newest
first with filters, one row with its judgment, and per-day figures counted like the report."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowAnswer, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Fit
from ragreplay.store import Store
from ragreplay.store.shadow_browse import OUTCOMES, DayFigures

T0 = datetime(2026, 10, 5, 12, 0, tzinfo=UTC)
WEIRD_KEY = 'team "a"/ü'


def make_row(rid: str, ts: datetime, challenger: str = "b", tags: dict[str, str] | None = None) -> ShadowRow:
    return make_shadow_row(
        id=rid,
        ts=ts,
        request_id=f"req-{rid}",
        query=f"question {rid}",
        tags=tags if tags is not None else {"dept": "hr"},
        challenger=challenger,
        champion_answer=ShadowAnswer(text=f"champion {rid}", chunk_ids=["c1"], latency_ms=10.0),
        challenger_answer=ShadowAnswer(text=f"candidate {rid}", chunk_ids=["c2"], latency_ms=20.0),
    )


def record(
    rid: str,
    challenger: str = "b",
    fit: Fit | None = Fit.FIT,
    winner: str | None = "tie",
    error: str | None = None,
) -> ShadowJudgmentRecord:
    return ShadowJudgmentRecord(
        row_id=rid,
        challenger=challenger,
        judged_at=T0,
        fit=fit,
        winner=winner,  # type: ignore[arg-type]
        consistent=None if winner is None else True,
        judge="fake:default",
        judge_prompt_version="p1",
        fit_judge="fake:default",
        fit_judge_prompt_version="f1",
        error=error,
        payload={"reason": f"because {rid}"},
    )


# (id, hours before T0, challenger, tags, fit, winner, error): several rows share a timestamp, so the keyset's
# id tie-break is exercised.
SPEC: list[tuple[str, float, str, dict[str, str], Fit | None, str | None, str | None]] = [
    ("a1", 0, "b", {"dept": "hr"}, Fit.FIT, "tie", None),
    ("a2", 0, "b", {"dept": "it"}, Fit.NO_FIT, "y", None),
    ("a3", 0, "c", {"dept": "hr"}, Fit.NO_FIT, "x", None),
    ("a4", 1, "b", {"dept": "hr", WEIRD_KEY: 'x"<y>'}, Fit.NO_FIT, "tie", None),
    ("a5", 1, "b", {"dept": "hr"}, Fit.UNSCORABLE, "y", None),
    ("a6", 1, "b", {}, Fit.FIT, None, None),
    ("a7", 25, "b", {"dept": "hr"}, None, None, "TimeoutError: 30 s"),
    ("a8", 25, "c", {"dept": "it"}, Fit.NO_FIT, "y", None),
    ("a9", 49, "b", {"dept": "hr"}, Fit.FIT, "x", None),
]


@pytest.fixture
def seeded(store: Store) -> Store:
    rows = [make_row(rid, T0 - timedelta(hours=h), ch, tags) for rid, h, ch, tags, *_ in SPEC]
    rows.append(make_row("unjudged", T0, "b"))
    store.shadow_rows.write_shadow_rows(rows)
    store.shadow_judgments.save_shadow_judgments(
        [record(rid, ch, fit, win, err) for rid, _, ch, _, fit, win, err in SPEC]
    )
    return store


def newest_first(ids: list[str]) -> list[str]:
    by_id = {rid: T0 - timedelta(hours=h) for rid, h, *_ in SPEC}
    return sorted(ids, key=lambda rid: (by_id[rid], rid), reverse=True)


def all_pages(store: Store, limit: int, **filters: object) -> list[list[str]]:
    pages: list[list[str]] = []
    after = None
    while True:
        page = store.shadow_browse.browse_shadow_judgments(after=after, limit=limit, **filters)  # type: ignore[arg-type]
        if not page:
            return pages
        pages.append([row.id for row, _ in page])
        last = page[-1][0]
        after = (last.ts, last.id)


def test_pages_are_newest_first_and_cover_every_judged_row_once(seeded: Store) -> None:
    everything = newest_first([s[0] for s in SPEC])
    for limit in (1, 2, 4, 50):
        pages = all_pages(seeded, limit)
        flat = [rid for page in pages for rid in page]
        assert flat == everything  # no row twice, none missing, the unjudged row never
        assert all(len(page) <= limit for page in pages)
    first = seeded.shadow_browse.browse_shadow_judgments(limit=1)
    row, judgment = first[0]
    assert row.id == everything[0] and row.ts.tzinfo is not None
    assert judgment.row_id == row.id and judgment.payload["reason"] == f"because {row.id}"
    with pytest.raises(ValueError):
        seeded.shadow_browse.browse_shadow_judgments(limit=0)


def test_filters(seeded: Store) -> None:
    def ids(**filters: object) -> list[str]:
        return [rid for page in all_pages(seeded, 2, **filters) for rid in page]

    assert ids(challenger="c") == ["a3", "a8"]
    assert ids(challenger="nobody") == []
    assert ids(tag=("dept", "it")) == ["a2", "a8"]
    assert ids(tag=(WEIRD_KEY, 'x"<y>')) == ["a4"]
    assert ids(tag=(WEIRD_KEY, "x")) == []
    assert ids(tag=("dept", "hr"), challenger="b") == newest_first(["a1", "a4", "a5", "a7", "a9"])
    assert ids(since=T0 - timedelta(hours=1)) == newest_first(["a1", "a2", "a3", "a4", "a5", "a6"])
    expected = {
        "disagree": ["a2", "a3", "a4", "a8"],
        "challenger": ["a2", "a5", "a8"],
        "champion": ["a3", "a9"],
        "tie": ["a1", "a4"],
        "unscorable": ["a5", "a6"],
        "error": ["a7"],
    }
    assert set(expected) == set(OUTCOMES)
    for outcome, want in expected.items():
        assert ids(outcome=outcome) == newest_first(want), outcome
    assert ids(outcome="disagree", challenger="b", since=T0 - timedelta(hours=2)) == ["a2", "a4"]
    with pytest.raises(ValueError):
        seeded.shadow_browse.browse_shadow_judgments(outcome="sideways")


def test_one_row_with_its_judgment(seeded: Store) -> None:
    found = seeded.shadow_browse.shadow_row_with_judgment("a4")
    assert found is not None
    row, judgment = found
    assert row.tags[WEIRD_KEY] == 'x"<y>' and row.challenger_answer.chunk_ids == ["c2"]
    assert judgment is not None and (judgment.fit, judgment.winner) == (Fit.NO_FIT, "tie")
    unjudged = seeded.shadow_browse.shadow_row_with_judgment("unjudged")
    assert unjudged is not None and unjudged[1] is None and unjudged[0].id == "unjudged"
    assert seeded.shadow_browse.shadow_row_with_judgment("missing") is None


def test_daily_figures_count_like_the_report(seeded: Store) -> None:
    days = seeded.shadow_browse.shadow_daily_figures(T0 - timedelta(days=30))
    d0, d1, d2 = date(2026, 10, 5), date(2026, 10, 4), date(2026, 10, 3)
    assert days == [
        DayFigures(
            day=d2, challenger="b", judged=1, fit=1
        ),  # a9: FIT, champion preferred but no disagreement
        DayFigures(day=d1, challenger="b", judged=1, errors=1),  # a7
        DayFigures(day=d1, challenger="c", judged=1, no_fit=1, wins=1),  # a8
        # a1 FIT tie, a2 NO_FIT y, a4 NO_FIT tie, a5 UNSCORABLE, a6 FIT with no preference (11:00 is day 0)
        DayFigures(day=d0, challenger="b", judged=5, fit=2, no_fit=2, wins=1, ties=1, unscorable=2),
        DayFigures(day=d0, challenger="c", judged=1, no_fit=1, losses=1),  # a3
    ]
    assert seeded.shadow_browse.shadow_daily_figures(T0 - timedelta(hours=1)) == [
        DayFigures(day=d0, challenger="b", judged=5, fit=2, no_fit=2, wins=1, ties=1, unscorable=2),
        DayFigures(day=d0, challenger="c", judged=1, no_fit=1, losses=1),
    ]
    assert seeded.shadow_browse.shadow_daily_figures(T0 + timedelta(hours=1)) == []
