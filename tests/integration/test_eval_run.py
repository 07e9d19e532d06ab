"""The eval job on a store: one judge call per row, every metric family where it applies, a cancelled run
resumed without repeating a call, a finished one re-shown without a call, errored rows retried."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from builders import make_eval_rows
from ragreplay.core.chat import ProviderError
from ragreplay.core.eval import EvalRow
from ragreplay.core.runs import RunStatus
from ragreplay.evaluation.run import EvalReport, evaluate, evaluate_dataset, stored_rows
from ragreplay.jobs.writer import StoreWriter
from ragreplay.metrics.llm import LLM_METRICS, build_request
from ragreplay.providers.cache import CachedModel
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.settings import Settings
from ragreplay.store import Store


def rows(n: int = 8) -> list[EvalRow]:
    return make_eval_rows(n)


def calls(log: Path) -> list[str]:
    return [json.loads(line)["key"] for line in log.read_text().splitlines()] if log.exists() else []


def test_one_judge_call_per_row_and_every_metric_where_it_applies(store: Store) -> None:
    data = rows()
    fake = FakeChatModel()

    async def go() -> EvalReport:
        async with StoreWriter(store) as writer:
            return await evaluate(store, writer, data, "rows.jsonl", fake, "fake:default", concurrency=4)

    report = asyncio.run(go())
    assert fake.calls == len(data)
    by_id = {r.row_id: r for r in report.rows}
    assert set(by_id["q0"].metrics) == set(LLM_METRICS) | {"bleu", "rouge_l", "token_f1", "exact_match"}
    assert by_id["q0"].metrics["faithfulness"].reason == "no contexts"  # q0 has no contexts
    assert "nDCG@10" in by_id["q1"].metrics and "bleu" not in by_id["q1"].metrics
    assert by_id["q1"].metrics["correctness"].reason == "no reference"
    assert by_id["q2"].metrics["faithfulness"].value == pytest.approx(0.5)  # "Parking is free." unsupported
    summary = report.summary
    faith = next(m for m in summary.metrics if m.name == "faithfulness")
    assert faith.n + faith.undetermined == len(data) and faith.reasons == {"no contexts": 3}
    assert set(summary.per_tag) == {"even", "odd"}
    stored = store.evals.get_eval(report.record.id)
    assert stored is not None and stored.status == RunStatus.DONE
    # the report is built from the rows as saved, not read back: the same rows, in dataset order
    assert report.rows == stored_rows(store, report.record.id)
    assert [r.row_id for r in report.rows] == [r.id for r in data]


def test_a_cancelled_run_resumes_without_repeating_a_call(store: Store, tmp_path: Path) -> None:
    data = rows(10)
    log = tmp_path / "calls.jsonl"
    hanging = FakeChatModel(call_log=log, hang_after=4)

    async def first() -> None:
        async with StoreWriter(store) as writer:
            judge = CachedModel(hanging, writer)
            await asyncio.wait_for(
                evaluate(store, writer, data, "rows.jsonl", judge, "fake:default", concurrency=2), 2.0
            )

    with pytest.raises(TimeoutError):
        asyncio.run(first())
    (interrupted,) = store.evals.list_evals()
    assert interrupted.status == RunStatus.INTERRUPTED
    saved = store.evals.scored_row_ids(interrupted.id)
    assert len(saved) == 4 and len(calls(log)) == 4

    settings = Settings(db=store.url)
    env = {"RAGREPLAY_FAKE_CALL_LOG": str(log)}
    report = asyncio.run(evaluate_dataset(store, settings, data, "rows.jsonl", "fake:default", env=env))
    assert report.resumed and report.record.id == interrupted.id and report.record.status == RunStatus.DONE
    keys = calls(log)
    assert len(keys) == len(data) and len(set(keys)) == len(data)  # each row's call made once, in all
    assert len(report.rows) == len(data)

    again = asyncio.run(evaluate_dataset(store, settings, data, "rows.jsonl", "fake:default", env=env))
    assert again.reshown and len(calls(log)) == len(data)  # shown again: no call
    fresh = asyncio.run(
        evaluate_dataset(store, settings, data, "rows.jsonl", "fake:default", fresh=True, env=env)
    )
    assert fresh.record.id != report.record.id
    assert len(calls(log)) == len(data)  # a fresh run's calls come from the model cache


def test_a_failed_judge_call_is_an_error_row_retried_on_resume(store: Store) -> None:
    data = rows(3)
    fake = FakeChatModel()
    texts = [asyncio.run(fake.complete(build_request(r))).text for r in data]

    async def go(model: ScriptedChatModel) -> EvalReport:
        async with StoreWriter(store) as writer:
            return await evaluate(store, writer, data, "d", model, "scripted:judge", concurrency=1)

    failing = ScriptedChatModel([ProviderError("HTTP 500", transient=False), texts[1], texts[2]])
    first = asyncio.run(go(failing))
    assert first.summary.errors == 1 and failing.calls == 3
    (errored,) = [r for r in first.rows if r.error]
    assert errored.row_id == "q0" and "HTTP 500" in errored.error
    retry = ScriptedChatModel([texts[0]])
    second = asyncio.run(go(retry))
    assert retry.calls == 1 and second.summary.errors == 0  # only the errored row is asked again
    assert second.record.id == first.record.id and second.resumed
