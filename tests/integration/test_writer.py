"""The engine's single writer: batched commits, readable pending cache entries, first-wins pins, failures."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from builders import make_run
from ragreplay.core.runs import ResultRecord, ResultStatus, RunStatus
from ragreplay.core.types import Rewrite
from ragreplay.jobs.writer import StoreWriter
from ragreplay.store import Store


def _run(store: Store, run_id: str = "run_w") -> None:
    record = make_run(run_id)
    store.runs.create_run(record, [])


async def test_concurrent_saves_are_batched_and_committed(store: Store) -> None:
    _run(store)
    async with StoreWriter(store) as writer:
        await asyncio.gather(
            *(
                writer.save_result(ResultRecord(run_id="run_w", case_id=f"c{i}", status=ResultStatus.DONE))
                for i in range(200)
            )
        )
        # every save returned only after its commit, and many shared a transaction
        assert len(store.runs.load_results("run_w")) == 200
        assert writer.batches < 50


async def test_last_result_for_a_case_wins_within_a_batch(store: Store) -> None:
    _run(store)
    async with StoreWriter(store) as writer:
        await asyncio.gather(
            writer.save_result(ResultRecord(run_id="run_w", case_id="c1", status=ResultStatus.PENDING)),
            writer.save_result(ResultRecord(run_id="run_w", case_id="c1", status=ResultStatus.DONE)),
        )
    (result,) = store.runs.load_results("run_w")
    assert result.status == ResultStatus.DONE


async def test_pending_cache_entries_are_readable_then_flushed(store: Store) -> None:
    async with StoreWriter(store) as writer:
        writer.cache_put("k1", "fake:m", {"q": 1}, {"text": "a"})
        writer.cache_put("k1", "fake:m", {"q": 1}, {"text": "second"})  # first wins
        assert writer.cache_get("k1") == {"text": "a"}
        assert store.cache.cache_get("k1") is None or store.cache.cache_get("k1") == {"text": "a"}
    assert store.cache.cache_get("k1") == {"text": "a"}
    assert store.cache.cache_count() == 1


async def test_pin_first_wins(store: Store) -> None:
    first = Rewrite(original="q", query="first", rewritten=True)
    second = Rewrite(original="q", query="second", rewritten=True)
    async with StoreWriter(store) as writer:
        a, b = await asyncio.gather(
            writer.pin_rewrite("case1", first, "rw@1"), writer.pin_rewrite("case1", second, "rw@1")
        )
        assert a == b == first
        assert await writer.pin_rewrite("case1", second, "rw@1") == first
        assert await writer.pin_rewrite("case1", second, "rw@2") == second  # another rewriter version
    assert store.rewrites.get_rewrites(["case1"], "rw@1") == {"case1": first}
    assert store.rewrites.get_rewrites(["case1"], "rw@2") == {"case1": second}


async def test_store_failure_reaches_every_waiter(store: Store) -> None:
    # no run row: the results' foreign key to runs makes the batch fail
    async with StoreWriter(store) as writer:
        with pytest.raises(Exception):  # noqa: B017 - the driver's own integrity error
            await writer.save_result(ResultRecord(run_id="missing", case_id="c1"))
    assert store.runs.load_results("missing") == []


async def test_comparison_rows_and_shadow_judgments_go_through_the_writer(store: Store) -> None:
    from ragreplay.core.comparisons import ComparisonRecord, ComparisonRowRecord
    from ragreplay.core.shadow import ShadowAnswer, ShadowJudgmentRecord, ShadowRow
    from ragreplay.core.types import Fit

    now = datetime.now(UTC)
    store.comparisons.create_comparison(
        ComparisonRecord(
            id="cmp_w",
            created_at=now,
            status=RunStatus.RUNNING,
            config_hash="c",
            dataset_hash="d",
            n_cases=2,
        )
    )
    rows = [
        ShadowRow(
            id=f"r{i}",
            request_id=f"q{i}",
            query="q",
            challenger="b",
            champion_answer=ShadowAnswer(text="a"),
            challenger_answer=ShadowAnswer(text="b"),
        )
        for i in range(3)
    ]
    store.shadow_rows.write_shadow_rows(rows)
    judged = [
        ShadowJudgmentRecord(
            row_id=r.id,
            challenger="b",
            judged_at=now,
            fit=Fit.FIT,
            judge="j",
            judge_prompt_version="p",
            fit_judge="f",
            fit_judge_prompt_version="p",
        )
        for r in rows[:2]
    ]
    async with StoreWriter(store) as writer:
        await asyncio.gather(
            writer.save_comparison_rows(
                [
                    ComparisonRowRecord(
                        comparison_id="cmp_w", case_id=f"c{i}", challenger="b", payload={"i": i}
                    )
                    for i in range(2)
                ]
            ),
            writer.save_shadow_judgments(judged[:1]),
            writer.save_shadow_judgments(judged[1:]),
        )
        # committed when the awaits returned, and in fewer transactions than writes
        assert store.comparisons.comparison_row_keys("cmp_w") == {("c0", "b"), ("c1", "b")}
        assert store.shadow_judgments.count_unjudged_shadow_rows() == 1
        assert writer.batches < 3
    assert {r.id for r, _ in store.shadow_judgments.load_shadow_judgments()} == {"r0", "r1"}


async def test_a_key_that_is_not_stored_costs_no_store_lookup(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.cache.cache_put("k_old", "fake:m", {"q": 0}, {"text": "old"})
    reads: list[str] = []
    read = store.cache.cache_get
    monkeypatch.setattr(store.cache, "cache_get", lambda key: reads.append(key) or read(key))
    async with StoreWriter(store) as writer:
        assert [writer.cache_get(f"k_new{i}") for i in range(50)] == [None] * 50
        assert reads == []  # none of them can be stored: no select, no transaction
        assert writer.cache_get("k_old") == {"text": "old"}
        writer.cache_put("k_new1", "fake:m", {"q": 1}, {"text": "new"})
    async with StoreWriter(store) as writer:
        assert writer.cache_get("k_new1") == {"text": "new"}  # stored by the last writer: known to this one
    assert reads == ["k_old", "k_new1"]


async def test_a_response_cached_during_the_run_is_found_once_flushed(store: Store) -> None:
    _run(store)
    async with StoreWriter(store) as writer:
        assert writer.cache_get("k1") is None  # the store's keys are read now, before k1 exists
        writer.cache_put("k1", "fake:m", {"q": 1}, {"text": "a"})
        await writer.save_result(ResultRecord(run_id="run_w", case_id="c1"))  # flushes k1 too
        assert writer.cache_get("k1") == {"text": "a"}  # no longer pending: read from the store


async def test_writes_that_trickle_in_share_a_transaction(store: Store) -> None:
    _run(store)

    async def save_later(i: int) -> None:
        await asyncio.sleep(i * 0.001)  # one answer a millisecond, as from a slow endpoint
        await writer.save_result(ResultRecord(run_id="run_w", case_id=f"c{i}", status=ResultStatus.DONE))

    async with StoreWriter(store) as writer:
        await asyncio.gather(*(save_later(i) for i in range(40)))
    assert len(store.runs.load_results("run_w")) == 40
    assert writer.batches <= 20  # a commit per write or two was 25-40


async def test_batched_rows_are_stored_as_single_statements_store_them(
    store: Store, tmp_path: object
) -> None:
    """The writer's rows (on SQLite straight to the driver) hold what a plain statement would: unstorable
    characters replaced, timestamps in the same form, an upserted result replaced."""
    _run(store)
    async with StoreWriter(store) as writer:
        writer.cache_put("k\x00", "fake:m", {"q": "\ud800"}, {"text": "a\x00"})
        await writer.save_result(ResultRecord(run_id="run_w", case_id="c1", status=ResultStatus.PENDING))
        await writer.save_result(
            ResultRecord(run_id="run_w", case_id="c1", status=ResultStatus.ERROR, error="bad \x00 \ud800 é")
        )
    store.cache.cache_put(
        "k2", "fake:m", {"q": "\ud800"}, {"text": "a\x00"}
    )  # one statement, through SQLAlchemy
    (result,) = store.runs.load_results("run_w")
    assert result.status == ResultStatus.ERROR and result.error == "bad \ufffd \ufffd é"
    with store.cache._read() as conn:
        rows = {
            row[0]: row[1:]
            for row in conn.exec_driver_sql("SELECT key, model, request, response FROM llm_cache")
        }
        stamps = [row[0] for row in conn.exec_driver_sql("SELECT created_at FROM llm_cache")]
    assert rows["k\ufffd"] == rows["k2"] == ("fake:m", '{"q":"\ufffd"}', '{"text":"a\\u0000"}')
    forms = {len(s) if isinstance(s, str) else type(s) for s in stamps}  # SQLite keeps text
    assert len(forms) == 1  # the same form of a timestamp either way


async def test_a_store_that_fails_while_the_writer_closes_does_not_hang_the_close(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(batch: object) -> object:
        raise ConnectionError("the store stopped answering")

    monkeypatch.setattr(store, "write_batch", down)
    writer = StoreWriter(store)
    pending = asyncio.ensure_future(writer.save_result(ResultRecord(run_id="run_w", case_id="c1")))
    await asyncio.sleep(0)  # queued, not written yet
    await asyncio.wait_for(writer.aclose(), timeout=10)  # used to wait forever for a wake-up that never came
    with pytest.raises(ConnectionError):
        await pending
