"""Shadow judgments in the store: saved together with the judged mark of their rows, read back joined to them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, func, select, update

from ragreplay.core.gc_pause import gc_paused
from ragreplay.core.shadow import ShadowAnswer, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Fit
from ragreplay.store import shadow_rollups as rollups
from ragreplay.store.base import BATCH_SIZE, StoreBase, chunked
from ragreplay.store.schema import dumps, shadow_judgments, shadow_rows


class ShadowJudgmentsRepository(StoreBase):
    """Saving shadow judgments (marking their rows judged in the same transaction) and reading them back."""

    def save_shadow_judgments(self, records: Sequence[ShadowJudgmentRecord], replace: bool = True) -> None:
        """Save ``records`` and set each row's ``judged_at``, all in one transaction: a row judged already gets
        the new judgment and mark (re-judging), unless ``replace`` is false (see :meth:`put_shadow_judgments`)."""
        if not records:
            return
        with self._write() as conn:
            self.put_shadow_judgments(conn, records, replace)

    def put_shadow_judgments(
        self, conn: Connection, records: Sequence[ShadowJudgmentRecord], replace: bool = False
    ) -> None:
        """Save ``records`` and mark their rows judged inside the caller's transaction ``conn``. Unless
        ``replace``, a row judged already keeps its judgment and its mark: the first judgment saved wins, so
        two workers that judged the same row (one whose lease had run out) never overwrite each other (the
        judging job's writes, through the jobs' writer)."""
        if not records:
            return
        row_ids = [r.row_id for r in records]
        before = rollups.before_judgments(conn, row_ids, _requests_of(conn, row_ids))
        insert = self._upsert if replace else self._insert_ignore
        conn.execute(insert(shadow_judgments, ["row_id"]), [_values(r) for r in records])
        by_time: dict[datetime, list[str]] = {}
        for record in records:
            by_time.setdefault(record.judged_at, []).append(record.row_id)
        for at, ids in by_time.items():
            for part in chunked(ids):
                marked = update(shadow_rows).where(shadow_rows.c.id.in_(part))
                if not replace:
                    marked = marked.where(shadow_rows.c.judged_at.is_(None))
                conn.execute(marked.values(judged_at=at))
        rollups.after_judgments(conn, row_ids, before)

    def count_unjudged_shadow_rows(self, since: datetime | None = None) -> int:
        """How many rows with ``ts >= since`` (all when ``None``) are not judged yet."""
        query = select(func.count()).select_from(shadow_rows).where(shadow_rows.c.judged_at.is_(None))
        if since is not None:
            query = query.where(shadow_rows.c.ts >= since)
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def load_shadow_judgments(
        self, since: datetime | None = None
    ) -> list[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """Every judged row with ``ts >= since`` (all when ``None``) with its judgment, oldest first."""
        with self._read() as conn, gc_paused():
            return [_pair(r) for r in conn.execute(_judged(since))]

    def iter_shadow_judgments(
        self, since: datetime | None = None
    ) -> Iterator[tuple[ShadowRow, ShadowJudgmentRecord]]:
        """What :meth:`load_shadow_judgments` returns, streamed from one read transaction: only a batch of rows
        is held at a time (a server-side cursor on PostgreSQL)."""
        with self._read() as conn:
            for r in conn.execution_options(yield_per=BATCH_SIZE).execute(_judged(since)):
                yield _pair(r)


def _requests_of(conn: Connection, row_ids: Sequence[str]) -> dict[str, str]:
    """The request id of each of ``row_ids`` that is a stored row."""
    found: dict[str, str] = {}
    for part in chunked(list(dict.fromkeys(row_ids))):
        query = select(shadow_rows.c.id, shadow_rows.c.request_id).where(shadow_rows.c.id.in_(part))
        found.update((row_id, request_id) for row_id, request_id in conn.execute(query))
    return found


def _values(record: ShadowJudgmentRecord) -> dict[str, Any]:
    values = record.model_dump(exclude={"payload"})
    values["fit"] = None if record.fit is None else record.fit.value
    values["payload"] = dumps(record.payload)
    return values


_ROW_COLUMNS = tuple(
    shadow_rows.c[name]
    for name in (
        "id",
        "ts",
        "request_id",
        "query",
        "user_hash",
        "tags",
        "challenger",
        "champion_answer",
        "challenger_answer",
    )
)
_JUDGMENT_COLUMNS = tuple(
    shadow_judgments.c[name].label(f"j_{name}")
    for name in (
        "judged_at",
        "fit",
        "winner",
        "consistent",
        "judge",
        "judge_prompt_version",
        "fit_judge",
        "fit_judge_prompt_version",
        "error",
        "payload",
    )
)
_FITS = {fit.value: fit for fit in Fit}


def _judged(since: datetime | None) -> Select[Any]:
    """The judged rows with ``ts >= since`` joined to their judgments, oldest first."""
    query = (
        select(*_ROW_COLUMNS, *_JUDGMENT_COLUMNS)
        .join(shadow_judgments, shadow_judgments.c.row_id == shadow_rows.c.id)
        .order_by(shadow_rows.c.ts, shadow_rows.c.id)
    )
    if since is not None:
        query = query.where(shadow_rows.c.ts >= since)
    return query


def _pair(r: Sequence[Any]) -> tuple[ShadowRow, ShadowJudgmentRecord]:
    """One row of :meth:`ShadowJudgmentsMixin.load_shadow_judgments`: the shadow row and its judgment."""
    (row_id, ts, request_id, query, user_hash, tags, challenger, champion, challenger_answer) = r[:9]
    (judged_at, fit, winner, consistent, judge, judge_v, fit_judge, fit_judge_v, error, payload) = r[9:]
    row = ShadowRow(
        id=row_id,
        ts=ts,
        request_id=request_id,
        query=query,
        user_hash=user_hash,
        tags=json.loads(tags),
        challenger=challenger,
        champion_answer=ShadowAnswer.model_validate_json(champion),
        challenger_answer=ShadowAnswer.model_validate_json(challenger_answer),
    )
    record = ShadowJudgmentRecord(
        row_id=row_id,
        challenger=challenger,
        judged_at=judged_at,
        fit=None if fit is None else _FITS[fit],
        winner=winner,
        consistent=consistent,
        judge=judge,
        judge_prompt_version=judge_v,
        fit_judge=fit_judge,
        fit_judge_prompt_version=fit_judge_v,
        error=error,
        payload=json.loads(payload),
    )
    return row, record


def _record(r: Row[Any]) -> ShadowJudgmentRecord:
    m = r._mapping
    return ShadowJudgmentRecord(
        row_id=m["j_row_id"],
        challenger=m["j_challenger"],
        judged_at=m["j_judged_at"],
        fit=None if m["j_fit"] is None else Fit(m["j_fit"]),
        winner=m["j_winner"],
        consistent=m["j_consistent"],
        judge=m["j_judge"],
        judge_prompt_version=m["j_judge_prompt_version"],
        fit_judge=m["j_fit_judge"],
        fit_judge_prompt_version=m["j_fit_judge_prompt_version"],
        error=m["j_error"],
        payload=json.loads(m["j_payload"]),
    )
