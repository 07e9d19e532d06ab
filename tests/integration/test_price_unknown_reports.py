"""Issue 16: a cost that includes calls of a model with no known price says "price unknown" in every report
(text, Markdown, HTML) and carries ``unpriced_calls`` beside the priced ``cost_usd`` in JSON; a priced model
still shows dollars and the fake model stays $0 (docs/providers.md, "Price unknown")."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from builders import make_case, save_cases
from ragreplay.compare.grid import build_summary
from ragreplay.core.chat import ChatRequest
from ragreplay.core.compare_stats import CompareRow
from ragreplay.core.costs import cost_text
from ragreplay.core.eval import EvalRow
from ragreplay.core.gate import ItemOutcome
from ragreplay.core.ids import case_id
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.core.types import Answer, Case, Fit
from ragreplay.evaluation.run import evaluate
from ragreplay.gate.job import _payload
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.replay.engine import Replayer
from ragreplay.replay.replay_run import summarize_run
from ragreplay.report.compare_json import render_comparison
from ragreplay.report.eval import render_eval
from ragreplay.report.html import render_html
from ragreplay.report.json_report import render_json
from ragreplay.report.markdown import render_markdown
from ragreplay.report.terminal import render_text
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget

UNPRICED = "price unknown for 2 calls"


def scripted(cost_usd: float | None) -> ScriptedChatModel:
    """The fake model's replies from a scripted model of the given price (``None``: no known price)."""
    fake = FakeChatModel()

    async def reply(request: ChatRequest) -> str:
        return (await fake.complete(request)).text

    return ScriptedChatModel(reply, name="acme:unlisted-model", cost_usd=cost_usd)


def test_cost_text_never_says_zero_dollars_for_unpriced_calls() -> None:
    assert cost_text(0.0) == "$0.0000"  # truly free
    assert cost_text(0.5, 0) == "$0.5000"
    assert cost_text(0.0, 1) == "price unknown for 1 call"
    assert cost_text(0.0123, 3) == "$0.0123 + price unknown for 3 calls"


def _cases(store: Store) -> list[Case]:
    cases = [
        make_case(
            id=case_id("c", i, f"question {i}?", "old"),
            conversation_id="c",
            turn_index=i,
            query=f"question {i}?",
        )
        for i in range(2)
    ]
    return save_cases(store, cases)


async def _replay(store: Store, run_id: str, cases: list[Case], judge: FitJudge) -> None:
    record = RunRecord(
        id=run_id,
        created_at=datetime.now(UTC),
        status=RunStatus.RUNNING,
        target_name="t",
        target_version="v",
        judge_name=judge.name,
        judge_prompt_version="p",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash=run_id,
        dataset_hash="d",
        n_cases=len(cases),
    )
    store.runs.create_run(record, [c.id for c in cases])
    async with StoreWriter(store) as writer:
        await Replayer(store, writer, FakeTarget(echo_old_answer=True), judge, None).run(run_id, cases)


@pytest.mark.parametrize(
    ("model", "shown", "unpriced"),
    [(scripted(None), UNPRICED, 2), (scripted(0.25), "$0.5000", 0), (FakeChatModel(), "$0.0000", 0)],
    ids=["unpriced", "priced", "fake"],
)
def test_replay_report_in_every_format(store: Store, model: object, shown: str, unpriced: int) -> None:
    cases = _cases(store)
    asyncio.run(_replay(store, "run_1", cases, FitJudge(model)))  # type: ignore[arg-type]
    summary = summarize_run(store, "run_1")
    assert summary.unpriced_calls == unpriced
    for text in (render_text(summary), render_markdown(summary), render_html(summary)):
        assert shown in text
        assert ("price unknown" in text) == bool(unpriced)
    data = json.loads(render_json(summary))
    assert data["unpriced_calls"] == unpriced and data["cost_usd"] == (0.5 if shown == "$0.5000" else 0.0)


def _row(name: str, unpriced: int) -> CompareRow:
    return CompareRow(
        case_id=f"c-{name}",
        challenger=name,
        agreement=Fit.FIT,
        preference="tie",
        champion_cost_usd=0.01,
        challenger_cost_usd=0.0 if unpriced else 0.02,
        challenger_unpriced_calls=unpriced,
    )


def test_compare_report_says_price_unknown_for_the_unpriced_side() -> None:
    summary = build_summary(
        champion="prod",
        challenger_names=["gen", "priced"],
        rows=[_row("gen", 1), _row("priced", 0)],
        outcomes={},
        judge="fake:default",
        judge_prompt_version="p",
        fit_judge="fake:default",
        order="both",
        cases="test",
        n_cases=1,
    )
    for fmt in ("text", "md", "html"):
        text = render_comparison(summary, fmt)
        assert "$0.0100 → price unknown for 1 call" in text, fmt
        assert "$0.0100 → $0.0200" in text, fmt  # the priced challenger keeps its dollars
        assert "+0.0100 $" in text and "$0.0000" not in text, fmt
    data = json.loads(render_comparison(summary, "json"))
    gen, priced = data["challengers"]
    assert gen["cost"]["challenger_usd"] == 0.0 and gen["cost"]["challenger_unpriced_calls"] == 1
    assert priced["cost"]["challenger_unpriced_calls"] == 0 and priced["cost"]["challenger_usd"] == 0.02
    assert data["rows"][0]["challenger_unpriced_calls"] == 1


@pytest.mark.parametrize(("cost", "shown", "unpriced"), [(None, UNPRICED, 2), (0.25, "$0.5000", 0)])
def test_eval_report_says_price_unknown(store: Store, cost: float | None, shown: str, unpriced: int) -> None:
    rows = [EvalRow(id=f"q{i}", question="Is parking free?", answer="Parking is free.") for i in range(2)]

    async def go() -> str:
        async with StoreWriter(store) as writer:
            report = await evaluate(store, writer, rows, "rows.jsonl", scripted(cost), "acme:unlisted-model")
        return render_eval(report, "json") + render_eval(report, "text") + render_eval(report, "md")

    json_part, _, rest = asyncio.run(go()).partition("\n}\n")
    assert shown in rest and ("price unknown" in rest) == bool(unpriced)
    assert json.loads(json_part + "\n}")["cost"]["unpriced_calls"] == unpriced


def test_a_gate_item_counts_unpriced_calls_and_does_not_measure_their_cost() -> None:
    outcome = ItemOutcome(key="k", stratum="win")
    priced, unpriced = Answer(text="a", cost_usd=0.01), Answer(text="b", unpriced_calls=1)
    payload = _payload(outcome, {"judge": {"cost_usd": 0.002, "unpriced_calls": 2}}, [], priced, unpriced)
    assert payload["cost_usd"] == pytest.approx(0.012) and payload["unpriced_calls"] == 3
    assert payload["target_cost_usd"] == {"champion": 0.01, "challenger": None}
