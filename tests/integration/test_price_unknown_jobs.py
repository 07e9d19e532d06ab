"""Issue 16: the judges of ``shadow judge``, the model of ``synth`` and the LLM check of ``coverage`` carry the
calls of a model with no known price (``unpriced_calls``) beside the priced dollars, in their progress and
summaries; a priced model keeps its dollars (docs/providers.md, "Price unknown")."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from builders import make_shadow_row
from ragreplay.cli.app import main
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.core.chat import ChatRequest
from ragreplay.core.eval import EvalRow
from ragreplay.datasets.corpus_facts import read_corpus_facts
from ragreplay.datasets.synth import generate
from ragreplay.diagnosis.corpus_search import CorpusSearch, load_corpus_of
from ragreplay.diagnosis.coverage_run import check_coverage
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.judges.pairwise import LLMPairwiseJudge
from ragreplay.providers.fake import respond
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.report.coverage import render_coverage
from ragreplay.shadow.judging import ShadowJudges, judge_shadow
from ragreplay.store import Store

CHALLENGER = demo_data_dir() / "challenger.yaml"
PRICES = [(None, 0.0, True), (0.01, 0.01, False)]
"""(the scripted model's price per call, the dollars expected per call, whether the calls are unpriced)"""


def fake_model(price: float | None) -> ScriptedChatModel:
    """The fake model's replies at ``price`` per call (``None``: a model with no known price)."""
    return ScriptedChatModel(respond, name="acme:unlisted-model", cost_usd=price)


@pytest.mark.parametrize(("price", "per_call", "unpriced"), PRICES)
def test_shadow_judging_counts_its_judges_calls(
    store: Store, price: float | None, per_call: float, unpriced: bool
) -> None:
    now = datetime.now(UTC)
    rows = [
        make_shadow_row(
            id=f"r{i}", ts=now - timedelta(hours=1), query="leave days?", champion_answer="25 days"
        )
        for i in range(2)
    ]
    store.shadow_rows.write_shadow_rows(rows)

    async def go() -> Progress:
        async with StoreWriter(store) as writer:
            model = fake_model(price)
            judges = ShadowJudges(pairwise=LLMPairwiseJudge(model), fit_judge=FitJudge(model))
            return await judge_shadow(store, writer, judges, since=now - timedelta(days=1))

    progress = asyncio.run(go())
    calls = 2 * 3  # per row: the FIT judge once, the pairwise judge in both orders
    assert progress.done == 2 and progress.errors == 0
    assert progress.unpriced_calls == (calls if unpriced else 0)
    assert progress.cost_usd == pytest.approx(calls * per_call)


def test_shadow_judge_json_carries_the_unpriced_calls(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store.open(store_url)
    try:
        store.shadow_rows.write_shadow_rows([make_shadow_row(query="leave days?")])
    finally:
        store.close()
    capsys.readouterr()
    assert main(["shadow", "judge", "--db", store_url, "--judge", "fake:default", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["judged"] == 1 and (data["cost_usd"], data["unpriced_calls"]) == (0.0, 0)  # the fake is free


@pytest.mark.parametrize(("price", "per_call", "unpriced"), PRICES)
async def test_synth_counts_the_models_calls(price: float | None, per_call: float, unpriced: bool) -> None:
    def reply(request: ChatRequest) -> str:
        return json.dumps(dict(request.hints["draft"]))

    facts = read_corpus_facts(CHALLENGER)
    model = ScriptedChatModel(reply, name="acme:unlisted-model", cost_usd=price)
    result = await generate(facts, 5, 0, model, "acme:unlisted-model", concurrency=2)
    assert result.unpriced_calls == (5 if unpriced else 0)
    assert result.cost_usd == pytest.approx(5 * per_call)


@pytest.mark.parametrize(("price", "per_call", "unpriced"), PRICES)
async def test_coverage_summary_counts_the_llm_checks_calls(
    price: float | None, per_call: float, unpriced: bool
) -> None:
    docs, chunking = load_corpus_of(Path(CHALLENGER))
    search = await asyncio.to_thread(CorpusSearch.build, docs, chunking)
    rows = [
        EvalRow(
            id=f"q{i}",
            question="What is the target bonus?",
            answer="",
            reference="The target bonus is 10% of salary.",
        )
        for i in range(3)
    ]
    seen: list[Progress] = []
    report = await check_coverage(
        rows,
        search,
        corpus="c",
        dataset="d",
        judge=fake_model(price),
        judge_name="acme:unlisted-model",
        progress=seen.append,
    )
    assert report.summary.judge_unpriced_calls == (3 if unpriced else 0)
    assert report.summary.judge_cost_usd == pytest.approx(3 * per_call)
    assert seen[-1].unpriced_calls == report.summary.judge_unpriced_calls
    assert all(q.judge is not None and q.judge.unpriced_calls == int(unpriced) for q in report.questions)
    shown = "price unknown for 3 calls" if unpriced else "$0.0300"
    for fmt in ("text", "md"):
        assert shown in render_coverage(report, fmt), fmt
    assert json.loads(render_coverage(report, "json"))["summary"]["judge_unpriced_calls"] == (
        3 if unpriced else 0
    )
