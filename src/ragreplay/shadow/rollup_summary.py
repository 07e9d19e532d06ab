"""The shadow report's figures from the store's rollups: the comparison summary of a window ``ts >= start``
without reading its rows (``rows`` empty), in time and memory that grow with the window's hours and
challengers, not its rows. Counts are the full scan's exactly; latency quantiles come from the rollups'
sketches (within :data:`~ragreplay.core.shadow_rollup.RELATIVE_ACCURACY`).

Judgments saved before the language check was kept with them are checked here once (streamed, and saved when
the store can be written) so that the wrong-language counts stay exact.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from sqlalchemy.exc import SQLAlchemyError

from ragreplay.compare.grid import ComparisonSummary, assemble_summary
from ragreplay.core.compare_stats import (
    ChallengerSummary,
    CompareRow,
    CostFigures,
    FeedbackFigures,
    LatencyFigures,
    PositionFigures,
    Spread,
    Spreads,
    TagBreakdown,
    challenger_summary,
    preference_stats,
)
from ragreplay.core.run_summary import RateValue, VerdictRates
from ragreplay.core.shadow_rollup import TAG_COUNTS, Rollup, Sketch, usd
from ragreplay.core.types import Verdict
from ragreplay.judges.position import position_of_counts
from ragreplay.shadow.judging import answers_in_wrong_language, compare_rows
from ragreplay.store import Store, StoreError
from ragreplay.store.shadow_browse import DayFigures
from ragreplay.store.shadow_rollups import WindowRollup

logger = logging.getLogger(__name__)

LANGUAGE_BATCH = 500
"""Judgments whose language check is saved per transaction while catching up."""


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _latency(r: Rollup) -> LatencyFigures:
    c50, c95 = r.sketch("champion_latency").quantiles([0.5, 0.95])
    h50, h95 = r.sketch("challenger_latency").quantiles([0.5, 0.95])
    return LatencyFigures(
        champion_p50=c50,
        champion_p95=c95,
        challenger_p50=h50,
        challenger_p95=h95,
        delta_p50=_delta(c50, h50),
        delta_p95=_delta(c95, h95),
    )


def _spread(sketch: Sketch) -> Spread:
    return Spread(n=sketch.n, points=sketch.points())


def _position(r: Rollup) -> PositionFigures | None:
    if not r.count("pairs"):
        return None
    stats = position_of_counts(
        n_pairs=r.count("pairs"),
        both_scored=r.count("pairs_both_scored"),
        consistent=r.count("pairs_consistent"),
        a_wins=r.count("pos_a"),
        b_wins=r.count("pos_b"),
        ties=r.count("pos_tie"),
        unscorable=r.count("pairs_unscorable"),
    )
    return PositionFigures.model_validate(stats.model_dump())


def _tags(r: Rollup) -> list[TagBreakdown]:
    out = []
    for key in sorted(r.tags):
        for value in sorted(r.tags[key]):
            c = {name: r.tags[key][value].get(name, 0) for name in TAG_COUNTS}
            out.append(
                TagBreakdown(
                    tag=key,
                    value=value,
                    n=c["n"],
                    agreement=RateValue.of(c["fit"], c["fit"] + c["no_fit"]),
                    preference=preference_stats(c["dis_challenger"], c["dis_champion"], c["dis_tie"]),
                )
            )
    return out


def _feedback(r: Rollup) -> FeedbackFigures | None:
    if not r.count("fb_rated"):
        return None
    counts = {v: r.count(f"fb_{v.value}") for v in Verdict if r.count(f"fb_{v.value}")}
    return FeedbackFigures(
        n_good=r.count("fb_good"),
        n_bad=r.count("fb_bad"),
        verdicts=VerdictRates.of(counts),
        unscorable=r.count("fb_rated") - sum(counts.values()),
        preference_good=preference_stats(
            r.count("fb_good_challenger"), r.count("fb_good_champion"), r.count("fb_good_tie")
        ),
        preference_bad=preference_stats(
            r.count("fb_bad_challenger"), r.count("fb_bad_champion"), r.count("fb_bad_tie")
        ),
    )


def challenger_of_rollup(name: str, r: Rollup) -> ChallengerSummary:
    """The comparison with challenger ``name`` from its rollup over a window."""
    return challenger_summary(
        name,
        n_cases=r.count("judged"),
        n_errors=r.count("errors"),
        agreement=RateValue.of(r.count("fit"), r.count("fit") + r.count("no_fit")),
        agreement_unscorable=r.count("fit_unscorable"),
        preference_disagreements=preference_stats(
            r.count("dis_challenger"), r.count("dis_champion"), r.count("dis_tie")
        ),
        preference_all=preference_stats(
            r.count("pref_challenger"), r.count("pref_champion"), r.count("pref_tie")
        ),
        preference_unscorable=r.count("pref_none"),
        position=_position(r),
        latency=_latency(r),
        cost=CostFigures(
            champion_usd=usd(r.champion_usd),
            challenger_usd=usd(r.challenger_usd),
            delta_usd=usd(r.challenger_usd) - usd(r.champion_usd),
            champion_unpriced_calls=r.count("champion_unpriced"),
            challenger_unpriced_calls=r.count("challenger_unpriced"),
        ),
        champion_wrong_language=r.count("wrong_champion"),
        challenger_wrong_language=r.count("wrong_challenger"),
        by_tag=_tags(r),
        feedback=_feedback(r),
        spreads=Spreads(
            champion_latency=_spread(r.sketch("champion_latency")),
            challenger_latency=_spread(r.sketch("challenger_latency")),
            champion_cost=_spread(r.sketch("champion_cost")),
            challenger_cost=_spread(r.sketch("challenger_cost")),
        ),
    )


def _names(r: Rollup, kind: str) -> str:
    return ", ".join(r.name_order(kind)) or "-"


def summary_of_window(window: WindowRollup, label: str) -> ComparisonSummary:
    """The comparison summary (without rows) of a window's rollups."""
    names = sorted(window.challengers)
    every = Rollup()
    for r in window.challengers.values():
        every.merge(Rollup(names=r.names))
    return assemble_summary(
        champion="champion",
        summaries=[challenger_of_rollup(n, window.challengers[n]) for n in names],
        rows=[],
        judge=_names(every, "judges"),
        judge_prompt_version=_names(every, "prompt_versions"),
        fit_judge=_names(every, "fit_judges"),
        order="random" if "random" in every.names.get("orders", {}) else "both",
        cases=label,
        n_cases=window.requests,
        judge_specs=every.name_order("specs") or None,
    )


def day_figures(window: WindowRollup) -> list[DayFigures]:
    """The per-UTC-day counts of each challenger, as the dashboard's per-day table reads them."""
    out = []
    for (day, challenger), c in sorted(window.days.items()):
        out.append(
            DayFigures(
                day=day,
                challenger=challenger,
                judged=c.get("judged", 0),
                errors=c.get("errors", 0),
                fit=c.get("fit", 0),
                no_fit=c.get("no_fit", 0),
                wins=c.get("dis_challenger", 0),
                losses=c.get("dis_champion", 0),
                ties=c.get("dis_tie", 0),
                unscorable=c.get("unscorable", 0),
            )
        )
    return out


def check_languages(store: Store, start: datetime, window: WindowRollup) -> WindowRollup:
    """``window`` with the wrong-language counts of judgments that have no saved language check: each such row
    of the window is checked (streamed), the checks saved (when the store can be written), the counts added."""
    if not any(r.count("language_unchecked") for r in window.challengers.values()):
        return window
    rows = store.shadow_rollups.unchecked_language(start)
    checked = 0
    can_save = True
    while True:
        batch = list(islice(rows, LANGUAGE_BATCH))
        if not batch:
            break
        checks: dict[str, tuple[bool, bool]] = {}
        for facts, question, champion, challenger in batch:
            flags = answers_in_wrong_language(question, facts.tags, champion, challenger)
            checks[facts.row_id] = flags
            r = window.challengers[facts.challenger]
            r.bump("language_unchecked", -1)
            r.bump("wrong_champion", flags[0])
            r.bump("wrong_challenger", flags[1])
        checked += len(checks)
        if can_save:
            try:
                store.shadow_rollups.save_language_checks(checks)
            except (StoreError, SQLAlchemyError) as exc:
                can_save = False
                logger.warning(
                    "shadow rollups: language checks not saved (%s); counted for this read only", exc
                )
    logger.info("shadow rollups: %d judgment(s) without a language check checked", checked)
    return window


@dataclass(frozen=True)
class WindowFigures:
    """A window's summary from rollups (no rows) and its per-day counts."""

    summary: ComparisonSummary
    days: list[DayFigures]


def rollup_figures(store: Store, start: datetime, label: str | None = None) -> WindowFigures:
    """The figures of the judged rows with ``ts >= start`` from the store's rollups."""
    window = check_languages(store, start, store.shadow_rollups.window(start))
    text = label or f"shadow rows since {start:%Y-%m-%d %H:%M} UTC"
    return WindowFigures(summary_of_window(window, text), day_figures(window))


def first_rows(store: Store, start: datetime, limit: int) -> list[CompareRow]:
    """The oldest ``limit`` judged rows of the window as comparison rows (texts and feedback included), read
    as a stream that stops there."""
    return list(islice(iter_rows(store, start), limit))


def iter_rows(store: Store, start: datetime) -> Iterator[CompareRow]:
    """Every judged row of the window as a comparison row, streamed (feedback looked up a page at a time)."""
    compare_row = compare_rows()
    judged = store.shadow_judgments.iter_shadow_judgments(start)
    while True:
        pairs = list(islice(judged, 1000))
        if not pairs:
            return
        labels = store.shadow_feedback.shadow_feedback_for(row.request_id for row, _ in pairs)
        for row, record in pairs:
            label = labels.get(row.request_id)
            yield compare_row(row, record, None if label is None else label.feedback)
