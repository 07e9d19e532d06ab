"""What a gate will cost before it spends: judge calls, tokens and dollars for the items still to run.

Tokens per judge call come from the gate's own measured averages when it ran before with the same judge (the
items of the newest such gates), else from a stated assumption. Targets are not priced here (a target that
calls a model reports its own cost as it runs). Items already saved by an interrupted gate cost nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragreplay.core.regset import SetItem
from ragreplay.core.types import TokenUsage
from ragreplay.providers.pricing import Price, lookup_price
from ragreplay.store import Store

ASSUMED_INPUT_TOKENS = 1500
ASSUMED_OUTPUT_TOKENS = 250
"""Per pairwise judge call when nothing was measured: question, two answers with their chunks, a JSON reply."""
MEASURED_GATES = 3
"""How many of the newest gates with the same judge the averages are taken from."""


@dataclass(frozen=True)
class GateEstimate:
    """The judge calls, tokens and cost of the items still to run; ``cost_usd`` is None for an unknown price."""

    items: int
    judge_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    basis: str

    def describe(self) -> str:
        """One line for the terminal."""
        cost = (
            "unknown cost (no price for the judge model: set `prices:`)"
            if self.cost_usd is None
            else (f"about ${self.cost_usd:.2f}")
        )
        return (
            f"{self.items} items to run: {self.judge_calls} judge calls, ~{self.input_tokens:,} input and "
            f"~{self.output_tokens:,} output tokens, {cost} ({self.basis}; cached calls cost nothing)"
        )


def measured_tokens(store: Store, judge_name: str) -> tuple[float, float, int] | None:
    """Mean input and output tokens per judge call over the newest gates judged by ``judge_name``, and the
    number of calls measured; ``None`` when none was."""
    calls = tokens_in = tokens_out = 0
    gates = [
        g for g in store.gates.list_gates(limit=50) if g.config.get("judge", {}).get("name") == judge_name
    ]
    for gate in gates[:MEASURED_GATES]:
        for item in store.gates.load_gate_items(gate.id):
            judge = item.payload.get("judge") or {}
            if judge.get("calls") and judge.get("input_tokens"):
                calls += int(judge["calls"])
                tokens_in += int(judge["input_tokens"])
                tokens_out += int(judge.get("output_tokens", 0))
    return (tokens_in / calls, tokens_out / calls, calls) if calls else None


def estimate_gate(
    store: Store, todo: Sequence[SetItem], judge_name: str, prices: Mapping[str, Price] | None = None
) -> GateEstimate:
    """The estimate for running ``todo`` with the pairwise judge ``judge_name`` (``provider:model``): two
    orders per item, plus one FIT call per item with a reviewer's answer."""
    calls = 2 * len(todo) + sum(1 for i in todo if i.candidate.reference_answer)
    measured = measured_tokens(store, judge_name)
    if measured is not None:
        per_in, per_out, n = measured
        basis = f"measured over {n} judge calls of earlier gates"
    else:
        per_in, per_out = float(ASSUMED_INPUT_TOKENS), float(ASSUMED_OUTPUT_TOKENS)
        basis = f"assumed {ASSUMED_INPUT_TOKENS} input + {ASSUMED_OUTPUT_TOKENS} output tokens per call"
    usage = TokenUsage(input=round(per_in * calls), output=round(per_out * calls))
    price = lookup_price(judge_name, prices)
    if judge_name.startswith("local"):
        price = Price(0.0, 0.0)
    cost = None if price is None else price.cost(usage)
    return GateEstimate(len(todo), calls, usage.input, usage.output, cost, basis)
