"""The gate's spend estimate on SQLite and PostgreSQL, on a store where some items are done (issue 10): items an
earlier gate judged with the same prompts are cached (free), an interrupted gate's saved items are not to run,
and both targets' calls are counted and priced (free without a model, measured where the store measured them,
unknown, never a made-up $0, where it cannot tell)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gates import PASSING, make_set, question, targets
from ragreplay.core.gate import GatePolicy
from ragreplay.core.regset import Candidate, RegressionSetRecord, SetItem
from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Answer
from ragreplay.gate.estimate import estimate_gate, target_cost
from ragreplay.gate.run import gate_target_files
from ragreplay.providers.pricing import Price
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.gates import GateItemRecord, GateRecord
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.config import (
    FakeTargetConfig,
    HttpTargetConfig,
    PythonTargetConfig,
    read_target_file,
)

PRICES = {"fake:default": Price(2.0, 8.0), "openai:gen-model": Price(1.0, 4.0)}


def run_gate(
    store_url: str, champion: Path, challenger: Path, env: dict[str, str] | None = None
) -> GateRecord:
    with Store.open(store_url) as store:
        report = asyncio.run(
            gate_target_files(
                store=store,
                settings=Settings(db=store_url),
                set_ref="latest",
                champion=champion,
                challenger=challenger,
                judge_spec="fake:default",
                policy=GatePolicy(),
                env=env or {},
            )
        )
    return report.gate


def second_version(store: Store, first: list[SetItem], referenced: str, n_new: int) -> list[SetItem]:
    """Version 2 of the set: the first version's items (``referenced`` now with a reviewer's answer) and
    ``n_new`` new questions."""
    items = [
        i.model_copy(update={"candidate": i.candidate.model_copy(update={"reference_answer": "Ten days."})})
        if i.key == referenced
        else i
        for i in first
    ]
    for n in range(n_new):
        c = Candidate(source="shadow", source_id=f"new{n}", question=question("new", n))
        items.append(
            SetItem(
                key=c.key,
                stratum="contested",
                candidate=c,
                cluster=100 + n,
                inclusion_probability=1.0,
                count=1,
                weight=1.0,
            )
        )
    record = RegressionSetRecord(id="rs_test_v2", version=2, created_at=datetime.now(UTC))
    store.regsets.create_set(record, items)
    return items


def down(item: SetItem) -> dict[str, object]:
    outcome = {"key": item.key, "stratum": item.stratum, "error": "challenger: target down"}
    return {"outcome": outcome, "cost_usd": 0.0}


def test_the_estimate_takes_off_cached_and_saved_items_and_prices_the_targets(
    tmp_path: Path, store_url: str
) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    earlier = run_gate(store_url, champion, challenger)  # 21 items judged: 42 judge calls in the cache
    configs = {
        "champion": read_target_file(champion).target,
        "challenger": read_target_file(challenger).target,
    }
    with Store.open(store_url) as store:
        done = store.gates.load_gate_items(earlier.id)
        assert sum(int(i.payload["judge"]["calls"]) for i in done) == 42
        # each side's cost per answer is kept for the next estimate
        assert all(i.payload["target_cost_usd"] == {"champion": 0.0, "challenger": 0.0} for i in done)
        first = store.regsets.load_items("rs_test_v1")
        referenced = first[0].key
        items = second_version(store, first, referenced, n_new=9)
        # a gate on version 2, interrupted after saving 3 of the new questions (a target was down for them:
        # saved, not to run again, and not judged)
        gate = GateRecord(
            id="gate_b",
            created_at=datetime.now(UTC) + timedelta(seconds=1),
            status=RunStatus.INTERRUPTED,
            set_id="rs_test_v2",
            challenger="challenger",
            config={**earlier.config, "set": {"id": "rs_test_v2", "version": 2}},
            config_hash="b",
            n_items=len(items),
        )
        store.gates.create_gate(gate)
        saved = items[-3:]
        store.gates.save_gate_items(
            [GateItemRecord(gate_id="gate_b", key=i.key, stratum=i.stratum, payload=down(i)) for i in saved]
        )
        keys = store.gates.gate_item_keys("gate_b")
        # tokens per judge call: measured over both gates' items
        judged = [
            i.payload["judge"]
            for g in ("gate_b", earlier.id)
            for i in store.gates.load_gate_items(g)
            if "judge" in i.payload
        ]
        per_in = sum(int(j["input_tokens"]) for j in judged) / sum(int(j["calls"]) for j in judged)
        per_out = sum(int(j["output_tokens"]) for j in judged) / sum(int(j["calls"]) for j in judged)
        todo = [i for i in items if i.key not in keys]
        estimate = estimate_gate(store, todo, "fake:default", PRICES, gate=gate, targets=configs)
        without_targets = estimate_gate(store, todo, "fake:default", PRICES)
    # 27 to run: 20 judged before with the same prompts (cached), 1 whose reviewer's answer is new (its
    # prompts changed: 2 orders + 1 FIT call), 6 new questions
    assert estimate.items == 27
    assert estimate.judge_calls == 20 * 2 + 3 + 6 * 2 == 55
    assert estimate.cached_calls == 40
    assert estimate.input_tokens == round(per_in * 15) and estimate.output_tokens == round(per_out * 15)
    judge_cost = (estimate.input_tokens * 2.0 + estimate.output_tokens * 8.0) / 1e6
    assert estimate.judge_cost_usd == pytest.approx(judge_cost)
    # the targets: 27 calls a side, fake (no model): free, not unknown
    assert [(t.side, t.calls, t.per_call_usd) for t in estimate.targets] == [
        ("champion", 27, 0.0),
        ("challenger", 27, 0.0),
    ]
    assert estimate.cost_usd == pytest.approx(judge_cost) and estimate.unknown() == []
    line = estimate.describe()
    assert "27 items to run: 55 judge calls, 40 of them cached (free); 15 to pay" in line
    assert "54 target calls" in line and "champion: 27 calls, free (fake target, no model)" in line
    # without the targets' configurations nothing is known to be cached: the old estimate's numbers
    assert without_targets.cached_calls == 0 and without_targets.judge_calls == 55
    assert without_targets.input_tokens == round(per_in * 55)
    # the real gate on version 2 makes no call the estimate counted as cached: every call it makes is one of
    # the 21 of the uncached items (at most: a question both sides answer alike is asked once in both orders)
    with Store.open(store_url) as store:
        planned = gate.model_copy(update={"id": "gate_planned"})
        full = estimate_gate(store, items, "fake:default", PRICES, gate=planned, targets=configs)
    assert (full.judge_calls, full.cached_calls) == (61, 40)
    log = tmp_path / "calls.jsonl"
    run_gate(store_url, champion, challenger, env={"RAGREPLAY_FAKE_CALL_LOG": str(log)})
    made = len(log.read_text().splitlines())
    assert 10 + 1 <= made <= 61 - 40, made  # each of the 10 uncached items asked, its FIT call too


def test_a_target_that_may_answer_otherwise_gets_no_cache_credit_and_no_made_up_price(
    tmp_path: Path, store_url: str
) -> None:
    champion, challenger = targets(tmp_path, make_set(store_url, PASSING))
    earlier = run_gate(store_url, champion, challenger)
    http = HttpTargetConfig(kind="http", url="http://127.0.0.1:9/ask")
    with Store.open(store_url) as store:
        todo = store.regsets.load_items("rs_test_v1")
        gate = earlier.model_copy(update={"id": "gate_c"})
        configs = {"champion": read_target_file(champion).target, "challenger": http}
        estimate = estimate_gate(store, todo, "fake:default", PRICES, gate=gate, targets=configs)
    assert estimate.cached_calls == 0 and estimate.judge_calls == 42  # the HTTP service may answer otherwise
    challenger_cost = estimate.targets[1]
    assert challenger_cost.per_call_usd is None and "cost_path" in challenger_cost.basis
    assert estimate.cost_usd is None and any("challenger" in u for u in estimate.unknown())
    assert "in all: unknown" in estimate.describe()


def test_target_prices_measured_assumed_or_unknown(store: Store) -> None:
    # an earlier gate measured the HTTP service's version; a replay run measured the generating RAG's
    now = datetime.now(UTC)
    store.gates.create_gate(
        GateRecord(
            id="gate_m",
            created_at=now,
            status=RunStatus.DONE,
            set_id="rs_x",
            challenger="svc",
            config={
                "champion": {"name": "old", "version": "v-old"},
                "challenger": {"name": "svc", "version": "v-svc"},
            },
            config_hash="m",
            n_items=3,
        )
    )
    costs = [0.002, 0.004, None]  # the third answer failed: not a measurement
    store.gates.save_gate_items(
        [
            GateItemRecord(
                gate_id="gate_m",
                key=f"k{n}",
                stratum="win",
                payload={"target_cost_usd": {"champion": 0.5, "challenger": cost}},
            )
            for n, cost in enumerate(costs)
        ]
    )
    run = RunRecord(
        id="run_gen",
        created_at=now,
        status=RunStatus.DONE,
        target_name="gen",
        target_version="v-gen",
        judge_name="fake:default",
        judge_prompt_version="p",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="g",
        dataset_hash="d",
        n_cases=4,
    )
    store.runs.create_run(run, ["c0", "c1", "c2", "c3"])
    for n, (cost, error) in enumerate([(0.001, None), (0.003, None), (0.0, "timeout"), (0.002, None)]):
        answer = Answer(text="a", cost_usd=cost, error=error)
        store.runs.save_result(
            ResultRecord(run_id="run_gen", case_id=f"c{n}", status=ResultStatus.DONE, answer=answer)
        )

    priced = HttpTargetConfig(kind="http", url="http://svc/ask", cost_path="usage.cost")
    measured = target_cost(store, "challenger", "svc", "v-svc", priced, 10, PRICES)
    assert measured.per_call_usd == pytest.approx(0.003) and measured.cost_usd == pytest.approx(0.03)
    assert "measured over 2 earlier answers" in measured.basis
    unmeasured = target_cost(store, "challenger", "svc", "v-new", priced, 10, PRICES)
    assert unmeasured.cost_usd is None
    silent = HttpTargetConfig(kind="http", url="http://svc/ask")
    assert target_cost(store, "challenger", "svc", "v-svc", silent, 10, PRICES).cost_usd is None

    generate = BuiltinTargetConfig.model_validate(
        {"kind": "builtin", "corpus": "docs", "answer": {"mode": "generate", "model": "openai:gen-model"}}
    )
    gen = target_cost(store, "champion", "gen", "v-gen", generate, 5, PRICES)
    assert gen.per_call_usd == pytest.approx(0.002) and "measured over 3 earlier answers" in gen.basis
    assumed = target_cost(store, "champion", "gen", "v-gen-2", generate, 5, PRICES)
    assert (
        assumed.per_call_usd == pytest.approx((1500 * 1.0 + 250 * 4.0) / 1e6) and "assumed" in assumed.basis
    )
    no_price = generate.model_copy(update={"answer": generate.answer.model_copy(update={"model": "acme:x"})})
    unpriced = target_cost(store, "champion", "gen", "v-gen", no_price, 5, PRICES)
    assert unpriced.cost_usd is None and "no price for acme:x" in unpriced.basis  # not the measured $0s

    extractive = BuiltinTargetConfig.model_validate({"kind": "builtin", "corpus": "docs"})
    assert target_cost(store, "champion", "b", "v-b", extractive, 5, PRICES).cost_usd == 0.0
    fake = FakeTargetConfig(kind="fake")
    assert target_cost(store, "champion", "f", "v-f", fake, 5, PRICES).cost_usd == 0.0
    # a Python function whose answers reported no cost: unknown, not $0
    store.gates.save_gate_items(
        [
            GateItemRecord(
                gate_id="gate_m", key="k9", stratum="win", payload={"target_cost_usd": {"champion": 0.0}}
            )
        ]
    )
    function = PythonTargetConfig(kind="python", function="mypkg.rag:answer")
    assert target_cost(store, "champion", "old", "v-old", function, 5, PRICES).per_call_usd == pytest.approx(
        0.5 * 3 / 4
    )
    quiet = target_cost(store, "champion", "new", "v-none", function, 5, PRICES)
    assert quiet.cost_usd is None and "no earlier answer" in quiet.basis
