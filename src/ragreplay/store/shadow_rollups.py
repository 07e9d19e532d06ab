"""The shadow log's rollups in the store: per UTC hour and challenger, the figures of its judged rows
(:mod:`ragreplay.core.shadow_rollup`), and per hour the requests whose newest judged row falls in it.

They are kept in the same transaction as what changes them: a judgment saved (its row's contribution added; a
judgment replaced rebuilds its hour from the rows), feedback stored or changed (the feedback counts of that
request's judged rows moved), a purge (hours before the cutoff dropped, the cutoff's hour rebuilt), and a
language check saved. A window ``ts >= start`` reads the hours from ``start``'s next hour on and scans only the
rows of ``start``'s own hour after ``start``, so a request costs O(hours x challengers), not O(rows).

Counting a request in the hour of its newest judged row makes the windows' request counts exact: a window
``ts >= start`` holds a request exactly when its newest judged row has ``ts >= start``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Connection, Select, delete, func, select, update

from ragreplay.core.shadow_rollup import (
    HOUR,
    Rollup,
    RowFacts,
    SideFacts,
    contribution,
    hour_of,
)
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked
from ragreplay.store.schema import (
    dumps,
    shadow_feedback,
    shadow_judgments,
    shadow_rollup_requests,
    shadow_rollups,
    shadow_rows,
)

_R = shadow_rows.c
_J = shadow_judgments.c
_F = shadow_feedback.c
_FACT_COLUMNS = (
    _R.id,
    _R.ts,
    _R.request_id,
    _R.challenger,
    _R.tags,
    _R.champion_answer,
    _R.challenger_answer,
    _J.fit,
    _J.winner,
    _J.error,
    _J.judge,
    _J.judge_prompt_version,
    _J.fit_judge,
    _J.payload,
    _F.feedback,
)


def _facts_query() -> Select[Any]:
    return (
        select(*_FACT_COLUMNS)
        .select_from(shadow_rows)
        .join(shadow_judgments, _J.row_id == _R.id)
        .outerjoin(shadow_feedback, _F.request_id == _R.request_id)
    )


def _side(answer_json: str) -> SideFacts:
    data = json.loads(answer_json)
    return SideFacts(
        latency_ms=data.get("latency_ms"),
        cost_usd=float(data.get("cost_usd") or 0.0),
        unpriced_calls=int(data.get("unpriced_calls") or 0),
    )


def facts_of(r: Sequence[Any]) -> RowFacts:
    """The :class:`RowFacts` of one row of :func:`_facts_query`."""
    (row_id, ts, request_id, challenger, tags, champion, challenger_answer) = r[:7]
    (fit, winner, error, judge, judge_v, fit_judge, payload, feedback) = r[7:]
    return RowFacts(
        row_id=row_id,
        ts=ts,
        request_id=request_id,
        challenger=challenger,
        tags=json.loads(tags),
        champion=_side(champion),
        challenger_side=_side(challenger_answer),
        fit=fit,
        winner=winner,
        error=error,
        judge=judge,
        judge_prompt_version=judge_v,
        fit_judge=fit_judge,
        payload=json.loads(payload),
        feedback=feedback,
    )


def iter_facts(
    conn: Connection, lo: datetime | None, hi: datetime | None, challenger: str | None = None
) -> Iterator[RowFacts]:
    """The facts of the judged rows with ``lo <= ts < hi`` (open ends when ``None``), oldest first, streamed."""
    query = _facts_query().order_by(_R.ts, _R.id)
    if lo is not None:
        query = query.where(_R.ts >= lo)
    if hi is not None:
        query = query.where(_R.ts < hi)
    if challenger is not None:
        query = query.where(_R.challenger == challenger)
    for r in conn.execute(query, execution_options={"yield_per": BATCH_SIZE}):
        yield facts_of(r)


Key = tuple[datetime, str]


@dataclass
class Deltas:
    """Changes to the rollups gathered in one transaction: rollups to add per (hour, challenger), request
    counts to add per hour, and (hour, challenger) buckets to rebuild from the rows."""

    add: dict[Key, Rollup] = field(default_factory=dict)
    requests: dict[datetime, int] = field(default_factory=dict)
    rebuild: set[Key] = field(default_factory=set)

    def into(self, key: Key) -> Rollup:
        """The rollup to add at ``key``."""
        found = self.add.get(key)
        if found is None:
            found = self.add[key] = Rollup()
        return found

    def count_request(self, hour: datetime, by: int) -> None:
        """Add ``by`` requests to ``hour``."""
        self.requests[hour] = self.requests.get(hour, 0) + by


def _is_pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _insert(conn: Connection, table: Any) -> Any:
    if _is_pg(conn):
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


def apply(conn: Connection, deltas: Deltas) -> None:
    """Write ``deltas`` inside the caller's transaction: buckets locked in key order (PostgreSQL), read, added
    to, written back; the buckets to rebuild recomputed from the rows."""
    keys = sorted(set(deltas.add) - deltas.rebuild)
    if keys:
        _add_rollups(conn, keys, deltas.add)
    for hour, challenger in sorted(deltas.rebuild):
        rebuild_bucket(conn, hour, challenger)
    hours = sorted(h for h, n in deltas.requests.items() if n)
    if hours:
        _add_requests(conn, hours, deltas.requests)


def _lock(conn: Connection, table: Any, rows: list[dict[str, Any]], keys: list[str]) -> None:
    # Make sure each bucket exists, then (PostgreSQL) lock them in key order so that concurrent writers queue
    # on a bucket instead of deadlocking or losing an update. SQLite's write transaction is exclusive already.
    conn.execute(_insert(conn, table).on_conflict_do_nothing(index_elements=keys), rows)


def _add_rollups(conn: Connection, keys: list[Key], add: Mapping[Key, Rollup]) -> None:
    c = shadow_rollups.c
    for i in range(0, len(keys), 200):
        part = keys[i : i + 200]
        _lock(
            conn,
            shadow_rollups,
            [{"hour": h, "challenger": ch, "data": "{}"} for h, ch in part],
            ["hour", "challenger"],
        )
        hours = sorted({h for h, _ in part})
        query = select(c.hour, c.challenger, c.data).where(
            c.hour.in_(hours), c.challenger.in_(sorted({ch for _, ch in part}))
        )
        if _is_pg(conn):
            query = query.order_by(c.hour, c.challenger).with_for_update()
        wanted = set(part)
        for hour, challenger, data in conn.execute(query).all():
            key = (hour, challenger)
            if key not in wanted:
                continue
            rollup = Rollup.from_json(json.loads(data))
            rollup.merge(add[key])
            conn.execute(
                update(shadow_rollups)
                .where(c.hour == hour, c.challenger == challenger)
                .values(data=dumps(rollup.to_json()))
            )


def _add_requests(conn: Connection, hours: list[datetime], add: Mapping[datetime, int]) -> None:
    c = shadow_rollup_requests.c
    _lock(conn, shadow_rollup_requests, [{"hour": h, "n": 0} for h in hours], ["hour"])
    for hour in hours:
        conn.execute(update(shadow_rollup_requests).where(c.hour == hour).values(n=c.n + add[hour]))


def rebuild_bucket(conn: Connection, hour: datetime, challenger: str) -> None:
    """Recompute the rollup of ``challenger``'s judged rows in ``hour`` from the rows (deleted when none)."""
    c = shadow_rollups.c
    total = Rollup()
    for facts in iter_facts(conn, hour, hour + HOUR, challenger):
        total.merge(contribution(facts))
    conn.execute(delete(shadow_rollups).where(c.hour == hour, c.challenger == challenger))
    if total.count("judged"):
        conn.execute(
            shadow_rollups.insert().values(hour=hour, challenger=challenger, data=dumps(total.to_json()))
        )


def _judged_join() -> Any:
    return shadow_rows.join(shadow_judgments, _J.row_id == _R.id)


def requests_newest_in(conn: Connection, lo: datetime, hi: datetime) -> int:
    """Requests with a judged row in ``lo <= ts < hi`` and none at ``ts >= hi``."""
    in_range = (
        select(_R.request_id).select_from(_judged_join()).where(_R.ts >= lo, _R.ts < hi).distinct().subquery()
    )
    later = (
        select(_R.request_id)
        .select_from(_judged_join())
        .where(_R.request_id == in_range.c.request_id, _R.ts >= hi)
        .exists()
    )
    return int(conn.execute(select(func.count()).select_from(in_range).where(~later)).scalar_one())


def rebuild_requests_hour(conn: Connection, hour: datetime) -> None:
    """Recompute the requests whose newest judged row is in ``hour``."""
    c = shadow_rollup_requests.c
    n = requests_newest_in(conn, hour, hour + HOUR)
    conn.execute(delete(shadow_rollup_requests).where(c.hour == hour))
    if n:
        conn.execute(shadow_rollup_requests.insert().values(hour=hour, n=n))


def newest_judged(conn: Connection, request_ids: Iterable[str]) -> dict[str, datetime]:
    """Per request id, the ``ts`` of its newest judged row (requests without one are absent)."""
    found: dict[str, datetime] = {}
    for part in chunked(list(dict.fromkeys(request_ids))):
        query = (
            select(_R.request_id, func.max(_R.ts))
            .select_from(_judged_join())
            .where(_R.request_id.in_(part))
            .group_by(_R.request_id)
        )
        for request_id, ts in conn.execute(query):
            found[request_id] = _aware(ts)
    return found


def _aware(ts: datetime | str) -> datetime:
    # an aggregate may come back as the stored text (SQLite) or a naive value: both are UTC
    value = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def facts_for_rows(conn: Connection, row_ids: Iterable[str]) -> list[RowFacts]:
    """The facts of the judged rows among ``row_ids``."""
    out: list[RowFacts] = []
    for part in chunked(list(dict.fromkeys(row_ids))):
        out.extend(facts_of(r) for r in conn.execute(_facts_query().where(_R.id.in_(part))))
    return out


def facts_for_requests(conn: Connection, request_ids: Iterable[str]) -> list[RowFacts]:
    """The facts of every judged row of ``request_ids``."""
    out: list[RowFacts] = []
    for part in chunked(list(dict.fromkeys(request_ids))):
        out.extend(facts_of(r) for r in conn.execute(_facts_query().where(_R.request_id.in_(part))))
    return out


def judged_row_ids(conn: Connection, row_ids: Iterable[str]) -> dict[str, tuple[datetime, str]]:
    """Of ``row_ids``, those judged already, with their row's (ts, challenger)."""
    found: dict[str, tuple[datetime, str]] = {}
    for part in chunked(list(dict.fromkeys(row_ids))):
        query = select(_R.id, _R.ts, _R.challenger).select_from(_judged_join()).where(_R.id.in_(part))
        found.update((row_id, (ts, ch)) for row_id, ts, ch in conn.execute(query))
    return found


def rebuild_all(conn: Connection) -> None:
    """Recompute every rollup from the rows (the migration's backfill, and a repair): hour by hour, so memory
    holds one hour's buckets at a time."""
    conn.execute(delete(shadow_rollups))
    conn.execute(delete(shadow_rollup_requests))
    current: datetime | None = None
    buckets: dict[str, Rollup] = {}

    def flush() -> None:
        if current is not None and buckets:
            conn.execute(
                shadow_rollups.insert(),
                [
                    {"hour": current, "challenger": ch, "data": dumps(r.to_json())}
                    for ch, r in buckets.items()
                ],
            )

    for facts in iter_facts(conn, None, None):
        hour = hour_of(facts.ts)
        if hour != current:
            flush()
            current, buckets = hour, {}
        into = buckets.get(facts.challenger)
        if into is None:
            into = buckets[facts.challenger] = Rollup()
        into.merge(contribution(facts))
    flush()
    newest = (
        select(func.max(_R.ts).label("newest")).select_from(_judged_join()).group_by(_R.request_id).subquery()
    )
    counts: dict[datetime, int] = {}
    for (ts,) in conn.execute(select(newest.c.newest), execution_options={"yield_per": BATCH_SIZE}):
        hour = hour_of(_aware(ts))
        counts[hour] = counts.get(hour, 0) + 1
    if counts:
        conn.execute(
            shadow_rollup_requests.insert(), [{"hour": h, "n": n} for h, n in sorted(counts.items())]
        )


# --- the hooks of the writers ---------------------------------------------------------------------------------


def lock_requests(conn: Connection, request_ids: Iterable[str]) -> None:
    """On PostgreSQL, lock the shadow rows of ``request_ids`` until the transaction ends, so that writers
    touching the same request (judgments of its rows, its feedback) take turns: each then reads what the one
    before committed (READ COMMITTED) and no request or label is counted twice. SQLite's write transactions are
    exclusive already."""
    if not _is_pg(conn):
        return
    for part in chunked(sorted(set(request_ids))):
        conn.execute(select(_R.id).where(_R.request_id.in_(part)).order_by(_R.id).with_for_update()).all()


def before_judgments(
    conn: Connection, row_ids: Sequence[str], request_of: Mapping[str, str]
) -> BeforeJudgments:
    """What the rollups need to know before judgments of ``row_ids`` are upserted: which rows were judged
    already (their buckets will be rebuilt) and each request's newest judged row until now (read once the
    requests' rows are locked)."""
    lock_requests(conn, request_of.values())
    judged = judged_row_ids(conn, row_ids)
    return BeforeJudgments(judged=judged, newest=newest_judged(conn, request_of.values()))


@dataclass(frozen=True)
class BeforeJudgments:
    """See :func:`before_judgments`."""

    judged: dict[str, tuple[datetime, str]]
    newest: dict[str, datetime]


@dataclass(frozen=True)
class EarlyJudgments:
    """Rows about to be written whose judgments are stored already (see :func:`judged_before_written`)."""

    row_ids: list[str]
    before: BeforeJudgments


def judged_before_written(conn: Connection, requests: Mapping[str, str]) -> EarlyJudgments | None:
    """Of the rows about to be inserted (id -> request id), the new ones that have a judgment already (saved
    before its row, so not in the rollups yet), with what :func:`after_judgments` needs once they are
    inserted; ``None`` when there are none (one indexed query in the usual case)."""
    judged: list[str] = []
    for part in chunked(list(requests)):
        judged.extend(conn.execute(select(_J.row_id).where(_J.row_id.in_(part))).scalars())
    if not judged:
        return None
    existing: set[str] = set()
    for part in chunked(judged):
        existing.update(conn.execute(select(_R.id).where(_R.id.in_(part))).scalars())
    fresh = [i for i in judged if i not in existing]
    if not fresh:
        return None
    newest = newest_judged(conn, (requests[i] for i in fresh))
    return EarlyJudgments(fresh, BeforeJudgments(judged={}, newest=newest))


def after_judgments(conn: Connection, row_ids: Sequence[str], before: BeforeJudgments) -> None:
    """Add the judgments of ``row_ids`` (just upserted) to the rollups; replaced ones rebuild their bucket."""
    deltas = Deltas()
    for ts, challenger in before.judged.values():
        deltas.rebuild.add((hour_of(ts), challenger))
    fresh = [i for i in row_ids if i not in before.judged]
    newest_now: dict[str, datetime] = {}
    for facts in facts_for_rows(conn, fresh):
        key = (hour_of(facts.ts), facts.challenger)
        if key not in deltas.rebuild:
            deltas.into(key).merge(contribution(facts))
        seen = newest_now.get(facts.request_id)
        if seen is None or facts.ts > seen:
            newest_now[facts.request_id] = facts.ts
    for request_id, ts in newest_now.items():
        old = before.newest.get(request_id)
        if old is None:
            deltas.count_request(hour_of(ts), 1)
        elif ts > old and hour_of(ts) != hour_of(old):
            deltas.count_request(hour_of(old), -1)
            deltas.count_request(hour_of(ts), 1)
    apply(conn, deltas)


def feedback_labels(conn: Connection, request_ids: Iterable[str], lock: bool = False) -> dict[str, str]:
    """The stored label of each of ``request_ids`` that has one (``lock``: after locking their rows, see
    :func:`lock_requests`; before a write)."""
    if lock:
        request_ids = list(request_ids)
        lock_requests(conn, request_ids)
    found: dict[str, str] = {}
    for part in chunked(list(dict.fromkeys(request_ids))):
        found.update(conn.execute(select(_F.request_id, _F.feedback).where(_F.request_id.in_(part))).all())
    return found


def after_feedback(conn: Connection, before: Mapping[str, str], request_ids: Iterable[str]) -> None:
    """Move the feedback counts of the judged rows of the requests whose label changed from ``before``."""
    wanted = list(dict.fromkeys(request_ids))
    now = feedback_labels(conn, wanted)
    changed = [r for r in wanted if now.get(r) != before.get(r)]
    if not changed:
        return
    deltas = Deltas()
    for facts in facts_for_requests(conn, changed):
        into = deltas.into((hour_of(facts.ts), facts.challenger))
        into.add_feedback(facts, before.get(facts.request_id), -1)
        into.add_feedback(facts, now.get(facts.request_id), 1)
    apply(conn, deltas)


def after_purge(conn: Connection, cutoff: datetime) -> None:
    """After the rows with ``ts < cutoff`` are deleted: drop the hours before the cutoff's hour and rebuild
    that hour (part of it was deleted)."""
    hour = hour_of(cutoff)
    conn.execute(delete(shadow_rollups).where(shadow_rollups.c.hour < hour))
    conn.execute(delete(shadow_rollup_requests).where(shadow_rollup_requests.c.hour < hour))
    if hour == cutoff:
        return
    challengers = conn.execute(
        select(shadow_rollups.c.challenger).where(shadow_rollups.c.hour == hour)
    ).scalars()
    for challenger in list(challengers):
        rebuild_bucket(conn, hour, challenger)
    rebuild_requests_hour(conn, hour)


# --- reading a window -----------------------------------------------------------------------------------------


@dataclass
class WindowRollup:
    """The rollups of a window ``ts >= start``: per challenger the total, per (UTC day, challenger) the
    counts, and the requests."""

    challengers: dict[str, Rollup] = field(default_factory=dict)
    days: dict[tuple[date, str], dict[str, int]] = field(default_factory=dict)
    requests: int = 0

    def add(self, hour: datetime, challenger: str, rollup: Rollup) -> None:
        """Take in one bucket (or one row's contribution) of ``challenger`` at ``hour``."""
        total = self.challengers.get(challenger)
        if total is None:
            total = self.challengers[challenger] = Rollup()
        total.merge(rollup)
        counts = self.days.setdefault((hour.date(), challenger), {})
        for name, n in rollup.counts.items():
            counts[name] = counts.get(name, 0) + n


class ShadowRollupsRepository(StoreBase):
    """Reading the rollups of a window, and rebuilding them all."""

    def window(self, start: datetime) -> WindowRollup:
        """The figures of the judged rows with ``ts >= start``: the hours after ``start``'s hour from the
        rollups, the rest of ``start``'s own hour from its rows."""
        first = hour_of(start)
        full_from = first if first == start else first + HOUR
        out = WindowRollup()
        c = shadow_rollups.c
        with self._read() as conn:
            query = (
                select(c.hour, c.challenger, c.data).where(c.hour >= full_from).order_by(c.hour, c.challenger)
            )
            for hour, challenger, data in conn.execute(query):
                out.add(hour, challenger, Rollup.from_json(json.loads(data)))
            rq = shadow_rollup_requests.c
            out.requests = int(
                conn.execute(
                    select(func.coalesce(func.sum(rq.n), 0)).where(rq.hour >= full_from)
                ).scalar_one()
            )
            if full_from != start:
                for facts in iter_facts(conn, start, full_from):
                    out.add(first, facts.challenger, contribution(facts))
                out.requests += requests_newest_in(conn, start, full_from)
        return out

    def judged_challengers(self, row_ids: Iterable[str], since: datetime) -> dict[str, str]:
        """Of ``row_ids``, the judged rows with ``ts >= since``, each with its challenger."""
        found: dict[str, str] = {}
        with self._read() as conn:
            for part in chunked(list(dict.fromkeys(row_ids))):
                query = (
                    select(_R.id, _R.challenger)
                    .select_from(_judged_join())
                    .where(_R.id.in_(part), _R.ts >= since)
                )
                found.update((row_id, name) for row_id, name in conn.execute(query))
        return found

    def rebuild(self) -> None:
        """Recompute every rollup from the stored rows, in one transaction."""
        with self._write() as conn:
            rebuild_all(conn)

    def unchecked_language(self, start: datetime) -> Iterator[tuple[RowFacts, str, str, str]]:
        """The judged rows with ``ts >= start`` whose judgment has no language check, with their question and
        both answers' texts (for the check), streamed oldest first."""
        query = (
            select(*_FACT_COLUMNS, _R.query)
            .select_from(shadow_rows)
            .join(shadow_judgments, _J.row_id == _R.id)
            .outerjoin(shadow_feedback, _F.request_id == _R.request_id)
            .where(_R.ts >= start, _J.error.is_(None), ~_J.payload.contains('"wrong_language"'))
            .order_by(_R.ts, _R.id)
        )
        with self._read() as conn:
            for r in conn.execute(query, execution_options={"yield_per": BATCH_SIZE}):
                facts = facts_of(r[:15])
                yield facts, r[15], json.loads(r[5]).get("text", ""), json.loads(r[6]).get("text", "")

    def save_language_checks(self, checks: Mapping[str, tuple[bool, bool]]) -> int:
        """Keep the language check (champion wrong, challenger wrong) with each judgment of ``checks``' row ids
        and move the rollups' counts, in one transaction; returns how many judgments took one."""
        saved = 0
        with self._write() as conn:
            deltas = Deltas()
            for facts in facts_for_rows(conn, checks):
                if "wrong_language" in facts.payload or facts.error is not None:
                    continue
                flags = checks[facts.row_id]
                payload = {**facts.payload, "wrong_language": [flags[0], flags[1]]}
                conn.execute(
                    update(shadow_judgments).where(_J.row_id == facts.row_id).values(payload=dumps(payload))
                )
                into = deltas.into((hour_of(facts.ts), facts.challenger))
                into.bump("language_unchecked", -1)
                into.bump("wrong_champion", flags[0])
                into.bump("wrong_challenger", flags[1])
                saved += 1
            apply(conn, deltas)
        return saved
