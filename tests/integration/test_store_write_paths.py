"""The writer's fast path stores what SQLAlchemy's own statements store (issues 13 and 15).

``Store.write_batch`` binds rows itself on SQLite (straight to the driver, text columns checked in one scan,
the JSON of a record written once per object); these tests write the same records both ways, under keys of their
own in one store, and compare what the tables hold, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Table, select
from sqlalchemy.exc import IntegrityError

from builders import make_run
from ragreplay.core.runs import ResultRecord, ResultStatus, RunStatus
from ragreplay.core.types import Answer, Fit, Judgment, RetrievedChunk, Rewrite, TokenUsage, Verdict
from ragreplay.store import Store
from ragreplay.store.batch import CacheEntry, JsonMemo, WriteBatch
from ragreplay.store.evals import EvalRowRecord, EvalRunRecord
from ragreplay.store.runs import result_row
from ragreplay.store.schema import dumps, eval_rows, llm_cache, results, rewrites, to_json

# Clean ASCII, clean non-ASCII, a NUL, a lone surrogate: every way a text column's check can go.
TEXTS = ["plain", "naïve café 東京", "nul \x00 here", "lone \ud800 surrogate"]
AT = datetime(2026, 12, 1, 20, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def prepared(store: Store) -> Store:
    """A store holding a run and an eval run for each path: ``fast_`` and ``ref_``."""
    for prefix in PATHS:
        store.runs.create_run(make_run(f"{prefix}run", AT), [])
        store.evals.create_eval(
            EvalRunRecord(
                id=f"{prefix}eval",
                created_at=AT,
                status=RunStatus.RUNNING,
                dataset="rows.jsonl",
                judge="fake:default",
                prompt_version="p",
                config_hash=f"{prefix}c",
                n_rows=len(TEXTS),
            )
        )
    return store


PATHS = ("fast_", "ref_")


def _records(p: str) -> WriteBatch:
    """Records of every kind the writer writes, each key starting with ``p``."""
    batch = WriteBatch()
    for i, text in enumerate(TEXTS):
        rewrite = Rewrite(original=text, query=f"{text}?", rewritten=True, cost_usd=0.1 * i)
        answer = Answer(
            text=text,
            contexts=(RetrievedChunk(id=f"c{i}", score=0.5, text=text),),
            latency_ms=1e-05 * i,
            tokens=TokenUsage(input=i, output=2),
            extra={"z": text, "a": [1, 2.5, None]},
        )
        judgment = Judgment(fit=Fit.FIT, reason=text, judge="j", prompt_version="p", raw=text)
        case_id = f"{p}case_{i}"
        answered = ResultRecord(
            run_id=f"{p}run", case_id=case_id, status=ResultStatus.PENDING, rewrite=rewrite, answer=answer
        )
        done = answered.model_copy(
            update={"status": ResultStatus.DONE, "judgment": judgment, "verdict": Verdict.GOOD_FIT}
        )
        batch.results += [answered, done] if i % 2 else [answered]  # last record per (run, case) wins
        batch.pins.append((case_id, "rw@1", rewrite))
        batch.cache.append(CacheEntry(f"{p}key_{i}", "fake:m", {"q": text, "n": i}, {"text": text, "i": i}))
        batch.eval_rows.append(
            EvalRowRecord(
                eval_id=f"{p}eval", row_id=f"{p}row_{i}", position=i, error=bool(i % 2), payload={"t": text}
            )
        )
    return batch


def _reference_write(store: Store, batch: WriteBatch) -> None:
    """What ``write_batch`` wrote before its fast path: rows built with :func:`to_json` per record, each table
    through SQLAlchemy's own ``conn.execute`` (every value through its column type's processor)."""
    now = datetime.now(UTC)
    writer = store._batch
    cache_rows = {
        e.key: {
            "key": e.key,
            "model": e.model,
            "request": dumps(e.request),
            "response": dumps(e.response),
            "created_at": now,
        }
        for e in reversed(batch.cache)
    }
    pin_rows = {
        (c, rw): {"case_id": c, "rewriter": rw, "data": to_json(r), "pinned_at": now}
        for c, rw, r in reversed(batch.pins)
    }
    result_rows = {(r.run_id, r.case_id): result_row(r) for r in batch.results}
    eval_rows_ = {
        (r.eval_id, r.row_id): {
            "eval_id": r.eval_id,
            "row_id": r.row_id,
            "position": r.position,
            "error": r.error,
            "payload": dumps(r.payload),
            "updated_at": now,
        }
        for r in batch.eval_rows
    }
    with writer._write() as conn:
        conn.execute(writer._insert_ignore(llm_cache, ["key"]), list(cache_rows.values()))
        conn.execute(writer._insert_ignore(rewrites, ["case_id", "rewriter"]), list(pin_rows.values()))
        conn.execute(writer._upsert(results, ["run_id", "case_id"]), list(result_rows.values()))
        conn.execute(writer._upsert(eval_rows, ["eval_id", "row_id"]), list(eval_rows_.values()))


STAMPS = {
    "llm_cache": "created_at",
    "rewrites": "pinned_at",
    "results": "updated_at",
    "eval_rows": "updated_at",
}


def _contents(store: Store, table: Table, prefix: str) -> list[tuple[Any, ...]]:
    """The rows of one path (keys starting with ``prefix``, cut off) as the backend returns them (on SQLite
    the raw stored values, SQLAlchemy's types bypassed), timestamps left out (each path takes its own moment),
    in key order."""
    columns = [c.name for c in table.columns if c.name != STAMPS[table.name]]
    keys = [c.name for c in table.primary_key.columns]
    with store._batch._read() as conn:
        if store.url.startswith("sqlite"):
            sql = f"SELECT {', '.join(columns)} FROM {table.name}"
            rows = [dict(zip(columns, r, strict=True)) for r in conn.exec_driver_sql(sql)]
        else:
            rows = [r._asdict() for r in conn.execute(select(*(table.c[c] for c in columns)))]
    mine = [r for r in rows if r[keys[0]].startswith(prefix)]
    for row in mine:
        for key in keys:
            row[key] = row[key].removeprefix(prefix)
    return sorted(tuple(r.values()) for r in mine)


def test_write_batch_stores_what_plain_statements_store(prepared: Store) -> None:
    store = prepared
    batch = _records("fast_")
    pinned = store.write_batch(batch)
    _reference_write(store, _records("ref_"))
    for table in (llm_cache, rewrites, results, eval_rows):
        got, expected = _contents(store, table, "fast_"), _contents(store, table, "ref_")
        assert got == expected, table.name
        assert len(got) == len(TEXTS)
    stored = next(r for r in _contents(store, results, "fast_") if r[1] == "case_3")
    assert "\ud800" not in stored[3] and "\ufffd" in stored[3]  # made storable, as the column type does
    # a pin stored as written is the rewrite itself; one the store had to change is what it holds
    assert pinned["fast_case_0", "rw@1"] is batch.pins[0][2]
    assert pinned["fast_case_3", "rw@1"].original == "lone \ufffd surrogate"
    for (case_id, rw), rewrite in pinned.items():
        assert store.rewrites.get_rewrites([case_id], rw)[case_id] == rewrite


def test_timestamps_are_stored_in_the_same_form(store: Store) -> None:
    """The same moment written through the fast path and through ``conn.execute`` is the same stored value
    (on SQLite the same text), for a batch's one shared timestamp and for one per row."""
    shared = AT + timedelta(hours=1)
    moments = [shared, shared, AT.replace(microsecond=0), AT.astimezone(timezone(timedelta(hours=5)))]
    writer = store._batch
    for prefix in PATHS:
        rows = [
            {"key": f"{prefix}{i}", "model": "m", "request": "{}", "response": "{}", "created_at": at}
            for i, at in enumerate(moments)
        ]
        with writer._write() as conn:
            if prefix == "fast_":
                assert writer._execute_rows(conn, writer._insert_ignore(llm_cache, ["key"]), rows) in (4, -1)
            else:
                conn.execute(writer._insert_ignore(llm_cache, ["key"]), rows)
    with writer._read() as conn:
        raw = dict(conn.exec_driver_sql("SELECT key, created_at FROM llm_cache").all())
        typed = dict(conn.execute(select(llm_cache.c.key, llm_cache.c.created_at)).all())
    for i in range(len(moments)):
        assert raw[f"fast_{i}"] == raw[f"ref_{i}"]
        assert typed[f"fast_{i}"] == moments[i]


def test_a_pin_already_there_is_read_back_not_taken_from_the_batch(store: Store) -> None:
    first = Rewrite(original="q", query="first", rewritten=True)
    second = Rewrite(original="q", query="second", rewritten=True)
    assert store.write_batch(WriteBatch(pins=[("case_a", "rw@1", first)]))["case_a", "rw@1"] is first
    pinned = store.write_batch(WriteBatch(pins=[("case_a", "rw@1", second), ("case_b", "rw@1", second)]))
    assert pinned["case_a", "rw@1"] == first and pinned["case_b", "rw@1"] is second


def test_json_memo_writes_what_to_json_writes_and_stays_bounded() -> None:
    memo = JsonMemo(max_entries=3, max_chars=10_000)
    models = [Answer(text=f"answer {i} é", extra={"b": i, "a": [i, None]}) for i in range(5)]
    for model in models + models:
        assert memo.to_json(model) == to_json(model)
    assert memo.to_json(None) is None
    assert len(memo._entries) == 3
    small = JsonMemo(max_entries=100, max_chars=len(to_json(models[0]) or "") * 2)
    for model in models:
        small.to_json(model)
    assert len(small._entries) <= 2 and small._chars <= small._max_chars


def test_a_failing_row_raises_what_sqlalchemy_raises(store: Store) -> None:
    """The driver path's failures reach the caller as SQLAlchemy's (which the store's failure handling and
    row-by-row retries read), and the transaction writes nothing."""
    writer = store._batch
    rows = [
        {"key": "ok", "model": "m", "request": "{}", "response": "{}", "created_at": AT},
        {"key": "bad", "model": None, "request": "{}", "response": "{}", "created_at": AT},  # NOT NULL
    ]
    with pytest.raises(IntegrityError), writer._write() as conn:
        writer._execute_rows(conn, writer._insert_ignore(llm_cache, ["key"]), rows)
    assert store.cache.cache_count() == 0
