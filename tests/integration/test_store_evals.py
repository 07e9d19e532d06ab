"""The eval runs repository on SQLite and PostgreSQL: create, resume lookup, rows upserted through the writer,
errored rows left for the resume plan, summary kept."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from ragreplay.core.runs import RunStatus
from ragreplay.jobs.writer import StoreWriter
from ragreplay.store import Store, StoreError
from ragreplay.store.evals import EvalRowRecord, EvalRunRecord

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def record(eval_id: str, at: datetime, config_hash: str = "h1") -> EvalRunRecord:
    return EvalRunRecord(
        id=eval_id,
        created_at=at,
        status=RunStatus.RUNNING,
        dataset="rows.jsonl",
        judge="fake:default",
        prompt_version="claims-1.x",
        config={"k": 5},
        config_hash=config_hash,
        n_rows=3,
    )


def row(eval_id: str, row_id: str, position: int, value: float | None, error: bool = False) -> EvalRowRecord:
    return EvalRowRecord(
        eval_id=eval_id, row_id=row_id, position=position, error=error, payload={"faithfulness": value}
    )


def test_eval_runs_are_created_found_resumed_and_finished(store: Store) -> None:
    store.evals.create_eval(record("eval_a", T0))
    with pytest.raises(StoreError, match="already exists"):
        store.evals.create_eval(record("eval_a", T0))
    store.evals.create_eval(record("eval_b", T0 + timedelta(minutes=1), config_hash="h2"))
    assert store.evals.find_eval("h1", unfinished_only=True) is not None
    assert store.evals.find_eval("h3") is None
    store.evals.save_eval_rows(
        [row("eval_a", "r2", 1, 0.5), row("eval_a", "r1", 0, 1.0), row("eval_a", "r2", 1, 0.25)]
    )
    store.evals.save_eval_rows([row("eval_a", "r3", 2, None, error=True)])
    loaded = store.evals.load_eval_rows("eval_a")
    assert [r.row_id for r in loaded] == ["r1", "r2", "r3"]  # dataset order
    assert loaded[1].payload == {"faithfulness": 0.25}  # the last write for a row wins
    assert store.evals.scored_row_ids("eval_a") == {"r1", "r2"}  # the errored row goes again on resume
    store.evals.set_eval_status("eval_a", RunStatus.INTERRUPTED)
    assert store.evals.find_eval("h1", unfinished_only=True) is not None
    store.evals.finish_eval("eval_a", {"rows": 3})
    with pytest.raises(StoreError, match="ambiguous"):
        store.evals.get_eval("eval_")
    done = store.evals.get_eval("eval_a")
    assert done is not None and done.status == RunStatus.DONE and done.summary == {"rows": 3}
    assert done.finished_at is not None and done.config == {"k": 5}
    assert store.evals.find_eval("h1", unfinished_only=True) is None
    assert store.evals.find_eval("h1") is not None
    assert [r.id for r in store.evals.list_evals()] == ["eval_b", "eval_a"]
    with pytest.raises(StoreError, match="no eval run"):
        store.evals.set_eval_status("nope", RunStatus.DONE)


def test_eval_rows_are_written_through_the_writer(store: Store) -> None:
    store.evals.create_eval(record("eval_w", T0))

    async def write() -> None:
        async with StoreWriter(store) as writer:
            await asyncio.gather(
                *(writer.save_eval_rows([row("eval_w", f"r{i}", i, i / 10)]) for i in range(10))
            )

    asyncio.run(write())
    assert store.evals.scored_row_ids("eval_w") == {f"r{i}" for i in range(10)}
