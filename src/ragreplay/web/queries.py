"""What each dashboard page shows, as plain JSON-ready data: the HTML page renders exactly this and its ``.json``
twin returns it, so the two never disagree.

Figures come from the same code as ``ragreplay shadow report`` (the store's rollups through
:func:`~ragreplay.shadow.rollup_summary.rollup_figures`, the cells of :mod:`ragreplay.report.compare_labels`);
lists of rows come from bounded keyset queries of the store (a page at most :data:`MAX_LIMIT` rows, with a
``next`` cursor). No page reads the window's rows whole."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from pydantic import ValidationError
from sqlalchemy.engine import make_url

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.compare_stats import ChallengerSummary
from ragreplay.core.review import Agreement
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.storable import storable_text
from ragreplay.errors import ConfigError
from ragreplay.judges.position import PairOutcome
from ragreplay.report.compare_labels import TAG_COLUMNS, grid_rows, header_lines, tag_rows
from ragreplay.report.word_diff import word_diff
from ragreplay.review.calibration import calibration_report
from ragreplay.review.failure_tags import simulated_reviewers
from ragreplay.shadow.judging import parse_since
from ragreplay.shadow.rollup_summary import rollup_figures
from ragreplay.store import Store
from ragreplay.store.shadow_browse import OUTCOMES, DayFigures
from ragreplay.web.overview_charts import overview_charts

DEFAULT_SINCE = "7d"
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_DAYS = 92
"""The per-day table shows at most this many of the window's newest days."""
ANSWER_PREVIEW = 280
"""Characters of each answer shown in the list of rows (the row's own page shows them whole)."""

_PREFERRED = {"x": "champion", "y": "challenger", "tie": "tie"}


class BadRequest(Exception):
    """A query parameter the dashboard cannot use; the message names it and says how to fix it."""


def store_label(url: str) -> str:
    """The store as a page names it: the backend and the database or file name, never a host or a user
    (the page may face the network)."""
    try:
        parsed = make_url(url)
    except Exception:  # a plain path
        return Path(url).name
    if parsed.get_backend_name() == "sqlite":
        return f"sqlite {Path(parsed.database or '').name or 'in memory'}"
    return f"{parsed.get_backend_name()} database {parsed.database or ''}".strip()


MAX_PARAM = 2000
"""The longest query parameter a page accepts."""


def check_params(params: Mapping[str, str]) -> None:
    """Refuse parameters no filter can hold: too long, or with characters no store keeps (a NUL)."""
    for name, value in params.items():
        if len(value) > MAX_PARAM:
            raise BadRequest(f"{name}: {len(value)} characters is too long. Fix: at most {MAX_PARAM}")
        if storable_text(value)[1]:
            raise BadRequest(f"{name}: holds a NUL or an unpaired surrogate. Fix: remove it from the filter")


def since_start(value: str | None, now: datetime) -> tuple[str, datetime]:
    """The window's text and start from the ``since`` parameter (default :data:`DEFAULT_SINCE`)."""
    text = (value or "").strip() or DEFAULT_SINCE
    try:
        return text, parse_since(text, now)
    except ConfigError as exc:
        if "year 1" in str(exc):
            raise BadRequest(
                f"since={text!r} reaches back past year 1. Fix: use a smaller age such as 365d"
            ) from None
        raise BadRequest(
            f"since={text!r} is not an age or a date. Fix: use an age such as 7d, 24h or 30m, or a date such "
            "as 2026-11-01 (ISO 8601, UTC when no zone is given), e.g. ?since=7d"
        ) from None


def link(path: str, **params: str | int | None) -> str:
    """``path`` with the given query parameters, leaving out the empty ones."""
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept)}" if kept else path


def row_link(row_id: str, suffix: str = "") -> str:
    """The path of one row's page (``suffix`` ``.json`` for its twin)."""
    return f"/rows/{quote(row_id, safe='')}{suffix}"


# --- the overview ---------------------------------------------------------------------------------------------


def _could_not_score(days: Sequence[DayFigures], name: str) -> int:
    # "Could not score" is either judge: the agreement judge said UNSCORABLE or the pairwise judge gave no
    # winner. Rows with a failed side are errors, counted apart, as in the report.
    return sum(d.unscorable for d in days if d.challenger == name)


def headline(s: ChallengerSummary, days: Sequence[DayFigures], since: str) -> dict[str, Any]:
    """The two numbers at the top for one challenger (agreement; preference when they disagree), each with its
    interval and n, and how many rows a judge could not score (``days``: the window's per-day figures)."""
    a, p = s.agreement, s.preference_disagreements
    return {
        "challenger": s.name,
        "judged": s.n_cases,
        "errors": s.n_errors,
        "agreement": a.value,
        "agreement_low": a.low if a.n else None,
        "agreement_high": a.high if a.n else None,
        "agreement_k": a.k,
        "agreement_n": a.n,
        "preference": p.share,
        "preference_low": p.low if p.n_decided else None,
        "preference_high": p.high if p.n_decided else None,
        "preference_n": p.n_decided,
        "challenger_wins": p.challenger_wins,
        "champion_wins": p.champion_wins,
        "ties": p.ties,
        "preference_p_value": p.p_value,
        "preference_warning": p.warning,
        "unscorable": _could_not_score(days, s.name),
        "agreement_unscorable": s.agreement_unscorable,
        "preference_unscorable": s.preference_unscorable,
        "latency_delta_p50_ms": s.latency.delta_p50,
        "cost_delta_usd": s.cost.delta_usd,
        "unpriced_calls": s.cost.champion_unpriced_calls + s.cost.challenger_unpriced_calls,
        "links": {
            "rows": link("/rows", challenger=s.name, since=since),
            "disagreements": link("/rows", challenger=s.name, outcome="disagree", since=since),
            "unscorable": link("/rows", challenger=s.name, outcome="unscorable", since=since),
            "errors": link("/rows", challenger=s.name, outcome="error", since=since),
        },
    }


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def day_rows(
    figures: Sequence[DayFigures], names: Sequence[str], start: datetime, now: datetime
) -> list[dict[str, Any]]:
    """One entry per UTC day of the window (at most the newest :data:`MAX_DAYS`) and challenger, oldest day
    first, days without judged rows included as zeros so a trend reads straight off the table."""
    first = max(start.astimezone(UTC).date(), now.astimezone(UTC).date() - timedelta(days=MAX_DAYS - 1))
    last = now.astimezone(UTC).date()
    found = {(f.day, f.challenger): f for f in figures}
    every = list(dict.fromkeys([*names, *(f.challenger for f in figures)]))
    out: list[dict[str, Any]] = []
    day = first
    while day <= last:
        for name in every:
            f = found.get((day, name)) or DayFigures(day=day, challenger=name)
            out.append(_day_entry(f))
        day += timedelta(days=1)
    return out


def _day_entry(f: DayFigures) -> dict[str, Any]:
    return {
        "day": f.day.isoformat(),
        "challenger": f.challenger,
        "judged": f.judged,
        "errors": f.errors,
        "agreement": _share(f.fit, f.fit + f.no_fit),
        "agreement_k": f.fit,
        "agreement_n": f.fit + f.no_fit,
        "wins": f.wins,
        "losses": f.losses,
        "ties": f.ties,
        "win_share": _share(f.wins, f.wins + f.losses),
        "unscorable": f.unscorable,
    }


def sparkline(values: Sequence[float | None], width: int = 160, height: int = 28) -> list[str]:
    """SVG polyline point lists for shares in [0, 1] over equally spaced days; a day without a value breaks
    the line, and a lone point is drawn as a tiny segment so it shows."""
    if not values:
        return []
    step = width / max(1, len(values) - 1)
    lines: list[list[str]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if lines[-1]:
                lines.append([])
            continue
        x, y = i * step, (1 - v) * (height - 2) + 1
        lines[-1].append(f"{x:.1f},{y:.1f}")
    out = []
    for points in lines:
        if len(points) == 1:
            x, y = (float(c) for c in points[0].split(","))
            points = [f"{max(0.0, x - 1):.1f},{y:.1f}", f"{x + 1:.1f},{y:.1f}"]
        if points:
            out.append(" ".join(points))
    return out


def _trend(days: Sequence[Mapping[str, Any]], name: str) -> dict[str, list[str]]:
    mine = [d for d in days if d["challenger"] == name]
    return {
        "agreement": sparkline([d["agreement"] for d in mine]),
        "win_share": sparkline([d["win_share"] for d in mine]),
    }


def _feedback_table(summary: ComparisonSummary) -> list[dict[str, Any]]:
    out = []
    for s in summary.challengers:
        f = s.feedback
        if f is None:
            continue
        out.append(
            {
                "challenger": s.name,
                "n_good": f.n_good,
                "n_bad": f.n_bad,
                "verdicts": {str(k): v for k, v in f.verdicts.counts.items()},
                "unscorable": f.unscorable,
                "good_kept": f.verdicts.good_maintenance.value,
                "bad_changed": f.verdicts.bad_change.value,
            }
        )
    return out


def calibration_banner(store: Store) -> dict[str, Any] | None:
    """Judge vs reviewers over every review so far, for the overview's banner: the status (``alert``, ``ok`` or
    ``not-enough-labels``), the overall figure, the slices that alert and the newest calibration history per judge
    version; ``None`` when nobody reviewed yet and there is no history."""
    calibration = calibration_report(store).calibration

    def figure(a: Agreement) -> dict[str, Any]:
        r = a.agreement
        return {
            "label": a.label,
            "value": r.value,
            "low": r.low,
            "high": r.high,
            "n": r.n,
            "threshold": a.threshold,
        }

    history = calibration_history(store)
    if calibration.overall.n == 0 and not history:
        return None
    return {
        "status": calibration.status,
        "overall": figure(calibration.overall),
        "min_n": calibration.overall.min_n,
        "alerts": [figure(a) for a in calibration.alerts],
        "history": history,
    }


HISTORY_ROWS = 10
"""Calibration snapshots the overview lists (``ragreplay calibration history`` has them all)."""


def calibration_history(store: Store, limit: int = HISTORY_ROWS) -> list[dict[str, Any]]:
    """The newest calibration snapshots: each judge version's agreement with reviewers when it was computed."""
    return [
        {
            "computed_at": s.computed_at.isoformat(),
            "judge": s.judge,
            "judge_version": s.judge_version,
            "source": s.source,
            "n": s.n,
            "agree": s.agree,
            "value": s.agreement,
            "low": s.low,
            "high": s.high,
            "kappa": s.kappa,
            "status": s.status,
        }
        for s in store.calibration_history.list_history(limit=limit)
    ]


def failure_tag_counts(store: Store, start: datetime) -> list[dict[str, Any]]:
    """How often reviewers gave each failure tag to items reviewed since ``start``, most frequent first (an item
    counts once per tag however many reviewers gave it)."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for stored in store.reviews.load_reviews(since=start):
        for tag in stored.review.failure_tags:
            seen.setdefault(tag, set()).add((stored.queue_id, stored.review.item_key))
    counts = sorted(((tag, len(items)) for tag, items in seen.items()), key=lambda t: (-t[1], t[0]))
    return [{"tag": tag, "items": n} for tag, n in counts]


MAX_TAG_ROWS = 500
"""The per-tag table lists at most this many (challenger, tag, value) rows, the most frequent first when there
are more (``by_tag.left_out`` counts the rest)."""


def _tag_table(summary: ComparisonSummary, text: str) -> dict[str, Any]:
    cells = tag_rows(summary)
    left_out = 0
    if len(cells) > MAX_TAG_ROWS:
        sizes = {(s.name, t.tag, t.value): t.n for s in summary.challengers for t in s.by_tag}
        keys = [(s.name, t.tag, t.value) for s in summary.challengers for t in s.by_tag]
        keep = set(sorted(range(len(keys)), key=lambda i: -sizes[keys[i]])[:MAX_TAG_ROWS])
        left_out = len(cells) - len(keep)
        cells = [c for i, c in enumerate(cells) if i in keep]
    return {
        "columns": list(TAG_COLUMNS),
        "rows": cells,
        "links": [link("/rows", challenger=r[0], tag=r[1], since=text) for r in cells],
        "left_out": left_out,
    }


def index_data(
    store: Store, since: str | None, now: datetime | None = None, full: bool = True
) -> dict[str, Any]:
    """Everything the overview shows for the window ``since``: the headline per challenger, the report's grid
    and per-tag cells, the users' feedback, warnings, the per-day table, and (``full``, the JSON twin) the
    whole summary of figures (no rows: they are paged at ``/rows.json``, linked as ``links.rows_json``); the
    HTML page gets the charts drawn from the same figures instead (``charts``, SVG markup:
    :mod:`ragreplay.web.overview_charts`). Figures come from the store's rollups
    (:mod:`ragreplay.shadow.rollup_summary`): the cost grows with the window's hours, not its rows."""
    now = now or datetime.now(UTC)
    text, start = since_start(since, now)
    figures = rollup_figures(store, start, f"shadow rows since {start:%Y-%m-%d %H:%M} UTC")
    summary = figures.summary
    names = [s.name for s in summary.challengers]
    days = day_rows(figures.days, names, start, now)
    return {
        "since": text,
        "start": start.isoformat(),
        "generated_at": now.isoformat(),
        "store": store_label(store.url),
        "calibration": calibration_banner(store),
        "failure_tags": failure_tag_counts(store, start),
        "simulated_reviewers": simulated_reviewers(store),
        "judged": sum(s.n_cases for s in summary.challengers),
        "requests": summary.n_cases,
        "about": [[k, v] for k, v in header_lines(summary) if k != "comparison"],
        "headline": [
            {**headline(s, figures.days, text), "trend": _trend(days, s.name)} for s in summary.challengers
        ],
        "grid": {
            "columns": names,
            "rows": [[label, cells] for label, cells in grid_rows(summary)],
        },
        "by_tag": _tag_table(summary, text),
        "feedback": _feedback_table(summary),
        "warnings": list(summary.warnings),
        "by_day": days,
        "links": {
            "rows": link("/rows", since=text),
            "rows_json": link("/rows.json", since=text),
            "json": link("/index.json", since=text),
        },
        **(
            {"summary": summary.model_dump(mode="json")}
            if full
            else {"charts": overview_charts(summary, days)}
        ),
    }


# --- the list of rows -----------------------------------------------------------------------------------------


def encode_cursor(ts: datetime, row_id: str) -> str:
    """An opaque cursor for the keyset (ts, id) of the last row shown."""
    raw = json.dumps([ts.astimezone(UTC).isoformat(), row_id], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The keyset of :func:`encode_cursor`; :class:`BadRequest` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ts_text, row_id = json.loads(raw)
        ts = datetime.fromisoformat(ts_text)
        if ts.tzinfo is None or not isinstance(row_id, str):
            raise ValueError(cursor)
        return ts, row_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise BadRequest(
            f"after={cursor!r} is not a cursor of this dashboard. Fix: follow the page's 'next' link, or "
            "leave after= out to start from the newest row"
        ) from None


def _preview(text: str) -> str:
    return text if len(text) <= ANSWER_PREVIEW else text[: ANSWER_PREVIEW - 1].rstrip() + "…"


def _feedback(item: ShadowFeedback | None) -> dict[str, Any] | None:
    if item is None:
        return None
    return {
        "label": item.feedback.value,
        "comment": item.comment,
        "ts": item.ts.isoformat(),
        "source": item.source,
    }


def _side_text(side: ShadowAnswer) -> str:
    return side.text if side.error is None else f"[failed: {side.error}]"


def list_entry(
    row: ShadowRow, record: ShadowJudgmentRecord, feedback: ShadowFeedback | None
) -> dict[str, Any]:
    """One judged row as the list shows it: answers cut to :data:`ANSWER_PREVIEW` characters."""
    return {
        "id": row.id,
        "url": row_link(row.id),
        "ts": row.ts.isoformat(),
        "request_id": row.request_id,
        "challenger": row.challenger,
        "question": _preview(row.query),
        "tags": dict(row.tags),
        "champion_answer": _preview(_side_text(row.champion_answer)),
        "challenger_answer": _preview(_side_text(row.challenger_answer)),
        "agreement": None if record.fit is None else record.fit.value,
        "preferred": None if record.winner is None else _PREFERRED[record.winner],
        "consistent": record.consistent,
        "error": record.error,
        "feedback": _feedback(feedback),
    }


def _tag_param(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise BadRequest(f"tag={value!r}: expected KEY=VALUE. Fix: e.g. ?tag=department=hr")
    return key, val


def _limit_param(value: str | None) -> int:
    if value is None or value.strip() == "":
        return DEFAULT_LIMIT
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(
            f"limit={value!r}: expected a whole number from 1 to {MAX_LIMIT}. Fix: e.g. ?limit=50"
        )
    return limit


def rows_data(store: Store, params: Mapping[str, str], now: datetime | None = None) -> dict[str, Any]:
    """A page of judged rows, newest first, filtered by the query ``params`` (``challenger``, ``tag``
    KEY=VALUE, ``outcome``, ``since``, ``limit``, ``after``), with the cursor of the next page."""
    now = now or datetime.now(UTC)
    check_params(params)
    text, start = since_start(params.get("since"), now)
    challenger = params.get("challenger") or None
    tag_text = params.get("tag") or None
    tag = _tag_param(tag_text)
    outcome = params.get("outcome") or None
    if outcome is not None and outcome not in OUTCOMES:
        raise BadRequest(f"outcome={outcome!r} is not known. Fix: use one of {', '.join(OUTCOMES)}")
    limit = _limit_param(params.get("limit"))
    after_text = params.get("after") or None
    after = None if after_text is None else decode_cursor(after_text)
    page = store.shadow_browse.browse_shadow_judgments(
        since=start, challenger=challenger, tag=tag, outcome=outcome, after=after, limit=limit + 1
    )
    more = len(page) > limit
    page = page[:limit]
    labels = store.shadow_feedback.shadow_feedback_for(row.request_id for row, _ in page)
    filters = {
        "since": text,
        "challenger": challenger,
        "tag": tag_text,
        "outcome": outcome,
        "limit": limit if params.get("limit") else None,
    }
    cursor = encode_cursor(page[-1][0].ts, page[-1][0].id) if more and page else None
    return {
        "filters": {**filters, "after": after_text},
        "start": start.isoformat(),
        "outcomes": list(OUTCOMES),
        "rows": [list_entry(row, record, labels.get(row.request_id)) for row, record in page],
        "next": cursor,
        "links": {
            "next": None if cursor is None else link("/rows", **filters, after=cursor),
            "next_json": None if cursor is None else link("/rows.json", **filters, after=cursor),
            "first": link("/rows", **filters),
            "json": link("/rows.json", **filters, after=after_text),
            "overview": link("/", since=text),
        },
    }


# --- one row --------------------------------------------------------------------------------------------------


def _side(side: ShadowAnswer) -> dict[str, Any]:
    return {
        "text": side.text,
        "chunk_ids": list(side.chunk_ids),
        "chunks": [{"id": c.id, "text": c.text} for c in side.chunks()],
        "latency_ms": side.latency_ms,
        "tokens_in": side.tokens.input,
        "tokens_out": side.tokens.output,
        "cost_usd": side.cost_usd,
        "unpriced_calls": side.unpriced_calls,
        "error": side.error,
    }


def _orderings(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each ordering the pairwise judge saw, told in champion/challenger terms (A and B undone)."""
    raw = payload.get("outcome")
    if raw is None:
        return []
    try:
        outcome = PairOutcome.model_validate(raw)
    except ValidationError:
        return []
    out = []
    for ordering, j in outcome.judgments:
        champion_first = ordering == "xy"
        champ, chall = (j.scores_a, j.scores_b) if champion_first else (j.scores_b, j.scores_a)
        winner: str | None = j.winner
        if j.winner in ("A", "B"):
            winner = "champion" if (j.winner == "A") == champion_first else "challenger"
        out.append(
            {
                "shown_first": "champion" if champion_first else "challenger",
                "winner": winner,
                "champion_scores": None if champ is None else champ.as_dict(),
                "challenger_scores": None if chall is None else chall.as_dict(),
                "reason": j.reason,
            }
        )
    return out


def _judgment(record: ShadowJudgmentRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    reason = str(record.payload.get("reason", ""))
    return {
        "agreement": None if record.fit is None else record.fit.value,
        "preferred": None if record.winner is None else _PREFERRED[record.winner],
        "consistent": record.consistent,
        "error": record.error,
        "reasons": [r for r in reason.split(" | ") if r],
        "order": record.payload.get("order"),
        "orderings": _orderings(record.payload),
        "judge": f"{record.judge} (prompt {record.judge_prompt_version})",
        "fit_judge": f"{record.fit_judge} (prompt {record.fit_judge_prompt_version})",
        "judged_at": record.judged_at.isoformat(),
    }


def row_data(store: Store, row_id: str) -> dict[str, Any] | None:
    """One shadow row whole: both answers, chunks, latency, cost, its judgment (``None`` while not judged),
    the user's feedback on the request and the word-level diff of the two answers (``diff``: segments
    ``same``, ``deleted`` from the champion's, ``inserted`` in the challenger's); ``None`` when there is no
    such row."""
    found = store.shadow_browse.shadow_row_with_judgment(row_id)
    if found is None:
        return None
    row, record = found
    feedback = store.shadow_feedback.shadow_feedback_for([row.request_id]).get(row.request_id)
    return {
        "id": row.id,
        "ts": row.ts.isoformat(),
        "request_id": row.request_id,
        "challenger": row.challenger,
        "question": row.query,
        "tags": dict(row.tags),
        "user_hash": row.user_hash,
        "champion_answer": _side(row.champion_answer),
        "challenger_answer": _side(row.challenger_answer),
        "judgment": _judgment(record),
        "feedback": _feedback(feedback),
        "diff": [asdict(s) for s in word_diff(row.champion_answer.text, row.challenger_answer.text)],
        "links": {
            "json": row_link(row.id, ".json"),
            "challenger_rows": link("/rows", challenger=row.challenger),
        },
    }
