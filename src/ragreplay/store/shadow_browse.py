"""Browsing the judged shadow log for the dashboard: pages of judged rows, one row with its judgment, per-day
figures. Every query is bounded: pages by keyset on ``(ts, id)`` with a LIMIT, the per-day figures by one
aggregate over a time window (the ``(ts, id)`` index serves all three)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, Select, Text, and_, case, cast, exists, func, literal, or_, select
from sqlalchemy.dialects.postgresql import JSONB

from ragreplay.core.shadow import ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Fit
from ragreplay.store.base import StoreBase
from ragreplay.store.schema import shadow_judgments, shadow_rows
from ragreplay.store.shadow import _row as shadow_row_of
from ragreplay.store.shadow_judgments import _record as judgment_of

Outcome = Literal["disagree", "challenger", "champion", "tie", "unscorable", "error"]
"""What a browse can filter judged rows on: the agreement judge found the answers different (``disagree``),
the pairwise judge preferred the challenger / the champion / neither (``tie``), a judge could not score the
pair (``unscorable``), or a side failed to answer (``error``)."""

OUTCOMES: tuple[str, ...] = get_args(Outcome)

_J = shadow_judgments.c
_R = shadow_rows.c
_OK = _J.error.is_(None)
_NO_FIT = and_(_OK, _J.fit == Fit.NO_FIT.value)
# The same rules as the report: an errored row counts for nothing else; "could not score" is either judge.
_CONDITIONS: dict[str, ColumnElement[bool]] = {
    "disagree": _NO_FIT,
    "challenger": and_(_OK, _J.winner == "y"),
    "champion": and_(_OK, _J.winner == "x"),
    "tie": and_(_OK, _J.winner == "tie"),
    "unscorable": and_(_OK, or_(_J.fit == Fit.UNSCORABLE.value, _J.winner.is_(None))),
    "error": _J.error.is_not(None),
}


def outcome_condition(outcome: str) -> ColumnElement[bool]:
    """The SQL condition on a judgment for ``outcome`` (one of :data:`OUTCOMES`); ``ValueError`` otherwise."""
    if outcome not in _CONDITIONS:
        raise ValueError(f"unknown outcome {outcome!r}: use one of {', '.join(OUTCOMES)}")
    return _CONDITIONS[outcome]


@dataclass(frozen=True)
class DayFigures:
    """One UTC day of one challenger's judged rows, counted like the report counts them: rows judged, rows
    with a failed side, FIT / NO_FIT among the others, who the pairwise judge preferred among the
    disagreements (NO_FIT), and rows that a judge could not score."""

    day: date
    challenger: str
    judged: int = 0
    errors: int = 0
    fit: int = 0
    no_fit: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    unscorable: int = 0


def _count_if(condition: ColumnElement[bool]) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


class ShadowBrowseRepository(StoreBase):
    """Read-only views of the judged shadow log for the dashboard."""

    def _tag_condition(self, key: str, value: str) -> ColumnElement[bool]:
        """Rows whose tag ``key`` equals ``value`` (any characters in either)."""
        if self._engine.dialect.name == "postgresql":
            return cast(_R.tags, JSONB).contains({key: value})
        each = func.json_each(_R.tags).table_valued("key", "value")
        return exists(select(literal(1)).select_from(each).where(each.c.key == key, each.c.value == value))

    def browse_shadow_judgments(
        self,
        *,
        since: datetime | None = None,
        challenger: str | None = None,
        tag: tuple[str, str] | None = None,
        outcome: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """At most ``limit`` judged rows with their judgments, newest first (ties by id, descending), with
        ``ts >= since``, of ``challenger``, carrying ``tag`` (key, value), with ``outcome`` (one of
        :data:`OUTCOMES`), strictly after the keyset ``after`` = (ts, id) of the last row of the previous
        page. Paging this way never shows a row twice nor skips one, however the log grows meanwhile."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        labelled = [c.label(f"j_{c.name}") for c in shadow_judgments.c]
        query: Select[Any] = (
            select(shadow_rows, *labelled)
            .join(shadow_judgments, _J.row_id == _R.id)
            .order_by(_R.ts.desc(), _R.id.desc())
            .limit(limit)
        )
        if since is not None:
            query = query.where(_R.ts >= since)
        if challenger is not None:
            query = query.where(_R.challenger == challenger)
        if tag is not None:
            query = query.where(self._tag_condition(*tag))
        if outcome is not None:
            query = query.where(outcome_condition(outcome))
        if after is not None:
            ts, row_id = after
            # ts <= last AND (ts < last OR id < last id): the same rows as the usual OR form, but the first
            # term bounds the index range, so the scan starts at the cursor instead of at the window's end.
            query = query.where(_R.ts <= ts, or_(_R.ts < ts, _R.id < row_id))
        with self._read() as conn:
            return [(shadow_row_of(r), judgment_of(r)) for r in conn.execute(query)]

    def shadow_row_with_judgment(self, row_id: str) -> tuple[ShadowRow, ShadowJudgmentRecord | None] | None:
        """The shadow row ``row_id`` with its judgment (``None`` while not judged); ``None`` if no such row."""
        labelled = [c.label(f"j_{c.name}") for c in shadow_judgments.c]
        query = (
            select(shadow_rows, *labelled)
            .outerjoin(shadow_judgments, _J.row_id == _R.id)
            .where(_R.id == row_id)
        )
        with self._read() as conn:
            found = conn.execute(query).first()
        if found is None:
            return None
        record = None if found._mapping["j_row_id"] is None else judgment_of(found)
        return shadow_row_of(found), record

    def _day_of_ts(self) -> ColumnElement[str]:
        if self._engine.dialect.name == "postgresql":
            return func.to_char(func.timezone("UTC", _R.ts), "YYYY-MM-DD", type_=Text())
        # SQLite keeps UTC timestamps as fixed-width text starting with YYYY-MM-DD.
        return func.substr(_R.ts, 1, 10, type_=Text())

    def shadow_daily_figures(self, since: datetime) -> list[DayFigures]:
        """Per UTC day and challenger, the judged rows with ``ts >= since`` counted as :class:`DayFigures`;
        oldest day first, then by challenger. Days without judged rows are absent."""
        inner = (
            select(
                self._day_of_ts().label("day"),
                _R.challenger.label("challenger"),
                _J.fit.label("fit"),
                _J.winner.label("winner"),
                _J.error.label("error"),
            )
            .join(shadow_judgments, _J.row_id == _R.id)
            .where(_R.ts >= since)
            .subquery()
        )
        ok = inner.c.error.is_(None)
        no_fit = and_(ok, inner.c.fit == Fit.NO_FIT.value)
        query = (
            select(
                inner.c.day,
                inner.c.challenger,
                func.count().label("judged"),
                _count_if(inner.c.error.is_not(None)).label("errors"),
                _count_if(and_(ok, inner.c.fit == Fit.FIT.value)).label("fit"),
                _count_if(no_fit).label("no_fit"),
                _count_if(and_(no_fit, inner.c.winner == "y")).label("wins"),
                _count_if(and_(no_fit, inner.c.winner == "x")).label("losses"),
                _count_if(and_(no_fit, inner.c.winner == "tie")).label("ties"),
                _count_if(and_(ok, or_(inner.c.fit == Fit.UNSCORABLE.value, inner.c.winner.is_(None)))).label(
                    "unscorable"
                ),
            )
            .group_by(inner.c.day, inner.c.challenger)
            .order_by(inner.c.day, inner.c.challenger)
        )
        with self._read() as conn:
            return [
                DayFigures(
                    day=date.fromisoformat(r.day),
                    challenger=r.challenger,
                    **{k: int(r._mapping[k]) for k in _COUNTS},
                )
                for r in conn.execute(query)
            ]


_COUNTS = ("judged", "errors", "fit", "no_fit", "wins", "losses", "ties", "unscorable")
