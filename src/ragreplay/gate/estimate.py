"""What a gate will cost before it spends: judge calls, target calls, tokens and dollars for the items still to
run. Items already saved by an interrupted gate are not to run, so they cost nothing.

**Judge calls**: two orders per item, one FIT call more per item with a reviewer's answer. An item an earlier gate
judged with the same judges, the same two target versions, the same seed and the same reviewer's answer is asked
the very same prompts again when both targets answer the same every time (fake, logged, the built-in extractive
RAG): its calls come from the cache and are free. With a target that may answer differently (an HTTP service, a
Python function, a generating model: targets are not cached) its calls are counted. Tokens per judge call come
from the measured averages of the newest gates with the same judge, else from a stated assumption.

**Target calls**: one per side and item (targets are not cached), priced per side: free for a target with no
model (fake, logged, built-in extractive); else at the mean cost per answer measured on earlier gates and replay
runs of the same target version; a built-in RAG generating with a model whose price is known but not measured
yet, at the assumed tokens; otherwise the price is unknown (an HTTP target without ``cost_path``, a Python
target whose answers reported no cost, a model with no price): never a made-up $0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragreplay.core.regset import SetItem
from ragreplay.core.types import TokenUsage
from ragreplay.providers.pricing import Price, lookup_price
from ragreplay.store import Store
from ragreplay.store.gates import GateRecord
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.config import (
    FakeTargetConfig,
    LoggedTargetConfig,
    TargetConfig,
)
from ragreplay.targets.cost import target_pricing

ASSUMED_INPUT_TOKENS = 1500
ASSUMED_OUTPUT_TOKENS = 250
"""Per pairwise judge call when nothing was measured: question, two answers with their chunks, a JSON reply (also
per answer of a built-in RAG that generates, not measured yet: question and chunks, the answer)."""
MEASURED_GATES = 3
"""How many of the newest gates with the same judge the averages are taken from (and how many gates and replay
runs of a target version its cost per answer)."""
MEASURED_ANSWERS = 2000
"""At most this many answers of one replay run are read for a target's cost per answer."""
SIDES = ("champion", "challenger")
SAME_PROMPTS = ("champion", "challenger", "judge", "fit_judge", "order", "seed")
"""The parts of a gate's configuration that decide the judges' prompts (with the targets' answers)."""


@dataclass(frozen=True)
class TargetCost:
    """One side's calls for the items still to run and what they cost; ``per_call_usd`` None: unknown."""

    side: str
    name: str
    calls: int
    per_call_usd: float | None
    basis: str

    @property
    def cost_usd(self) -> float | None:
        """The side's cost; ``None`` when its price is unknown."""
        return None if self.per_call_usd is None else self.per_call_usd * self.calls

    def describe(self) -> str:
        """``challenger: 21 calls, about $0.04 ($0.0020 each, measured over 40 answers)``."""
        if self.per_call_usd is None:
            return f"{self.side}: {self.calls} calls, price unknown ({self.basis})"
        if self.per_call_usd == 0:
            return f"{self.side}: {self.calls} calls, free ({self.basis})"
        return (
            f"{self.side}: {self.calls} calls, about ${self.cost_usd:.2f} "
            f"(${self.per_call_usd:.4f} each, {self.basis})"
        )


@dataclass(frozen=True)
class GateEstimate:
    """The calls, tokens and cost of the items still to run; ``cost_usd`` is None when a price is unknown."""

    items: int
    judge_calls: int
    input_tokens: int
    output_tokens: int
    judge_cost_usd: float | None
    basis: str
    cached_calls: int = 0
    """Judge calls of items an earlier gate asked with the same prompts: answered by the cache, free."""
    targets: tuple[TargetCost, ...] = field(default=())

    @property
    def cost_usd(self) -> float | None:
        """Judges and targets together; ``None`` when any part's price is unknown."""
        parts = [self.judge_cost_usd, *(t.cost_usd for t in self.targets)]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    def unknown(self) -> list[str]:
        """What could not be priced, one phrase each."""
        found = [] if self.judge_cost_usd is not None else ["the judge model has no price (set `prices:`)"]
        return found + [f"the {t.side}'s calls ({t.basis})" for t in self.targets if t.cost_usd is None]

    def describe(self) -> str:
        """One line for the terminal."""
        paid = self.judge_calls - self.cached_calls
        judge_cost = (
            "unknown cost (no price for the judge model: set `prices:`)"
            if self.judge_cost_usd is None
            else f"about ${self.judge_cost_usd:.2f}"
        )
        cached = f", {self.cached_calls} of them cached (free)" if self.cached_calls else ""
        line = (
            f"{self.items} items to run: {self.judge_calls} judge calls{cached}; {paid} to pay: "
            f"~{self.input_tokens:,} input and ~{self.output_tokens:,} output tokens, {judge_cost} ({self.basis})"
        )
        if self.targets:
            line += f"; {sum(t.calls for t in self.targets)} target calls: " + ", ".join(
                t.describe() for t in self.targets
            )
            total = self.cost_usd
            line += "; in all: " + (
                f"about ${total:.2f}" if total is not None else "unknown (" + "; ".join(self.unknown()) + ")"
            )
        return line


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


def measured_answer_costs(store: Store, version: str) -> Iterator[float]:
    """The cost of each answer (without error) the target version ``version`` gave in the newest gates that
    ran it (either side) and the newest replay runs of it."""
    gates = [
        g
        for g in store.gates.list_gates(limit=50)
        if any(g.config.get(side, {}).get("version") == version for side in SIDES)
    ]
    for gate in gates[:MEASURED_GATES]:
        sides = [side for side in SIDES if gate.config.get(side, {}).get("version") == version]
        for item in store.gates.load_gate_items(gate.id):
            costs = item.payload.get("target_cost_usd") or {}
            yield from (float(costs[side]) for side in sides if costs.get(side) is not None)
    runs = [r for r in store.runs.list_runs(limit=50) if r.target_version == version]
    for run in runs[:MEASURED_GATES]:
        read = 0
        for result in store.runs.iter_results(run.id, only_started=True):
            answer = result.answer
            if answer is not None and answer.error is None and not answer.unpriced_calls:
                yield answer.cost_usd
                read += 1
                if read >= MEASURED_ANSWERS:
                    break


def deterministic(cfg: TargetConfig | None) -> bool:
    """Does a target of this configuration give the same answer to the same question every time?"""
    if isinstance(cfg, FakeTargetConfig | LoggedTargetConfig):
        return True
    return isinstance(cfg, BuiltinTargetConfig) and cfg.answer.mode != "generate"


def target_cost(
    store: Store,
    side: str,
    name: str,
    version: str,
    cfg: TargetConfig,
    calls: int,
    prices: Mapping[str, Price] | None = None,
) -> TargetCost:
    """What ``calls`` answers of one side cost: the target's pricing (``targets/cost.target_pricing``, the rule
    eval tracing uses too), then the measured mean or, for a priced model not measured yet, the assumed
    tokens (see the module docstring)."""
    pricing = target_pricing(cfg, prices)
    if pricing.free:
        return TargetCost(side, name, calls, 0.0, pricing.basis)
    if pricing.known is False:
        return TargetCost(side, name, calls, None, pricing.basis)
    costs = list(measured_answer_costs(store, version)) if calls else []
    measured = f"measured over {len(costs)} earlier answers"
    mean = sum(costs) / len(costs) if costs else None
    if mean is None and pricing.price is not None:
        usage = TokenUsage(input=ASSUMED_INPUT_TOKENS, output=ASSUMED_OUTPUT_TOKENS)
        model = cfg.answer.model if isinstance(cfg, BuiltinTargetConfig) else "the model"
        assumed = (
            f"assumed {ASSUMED_INPUT_TOKENS} input + {ASSUMED_OUTPUT_TOKENS} output tokens at {model}'s price"
        )
        return TargetCost(side, name, calls, pricing.price.cost(usage), assumed)
    if mean is None:
        return TargetCost(side, name, calls, None, "no earlier answer of this version measured")
    if mean == 0 and pricing.known is None:
        return TargetCost(side, name, calls, None, f"its answers reported no cost ({measured})")
    return TargetCost(side, name, calls, mean, measured)


def cached_keys(store: Store, gate: GateRecord, todo: Sequence[SetItem]) -> set[str]:
    """The keys of ``todo`` an earlier gate judged with the very same prompts (see the module docstring): the
    same configuration but the set, no error, and the same reviewer's answer."""
    wanted = {i.key: i.candidate.reference_answer for i in todo}
    same = [
        g
        for g in store.gates.list_gates(limit=50)
        if g.id != gate.id and all(g.config.get(k) == gate.config.get(k) for k in SAME_PROMPTS)
    ]
    references: dict[str, dict[str, str | None]] = {}
    found: set[str] = set()
    for earlier in same:
        if earlier.set_id not in references:
            items = store.regsets.load_items(earlier.set_id) if earlier.set_id != gate.set_id else todo
            references[earlier.set_id] = {i.key: i.candidate.reference_answer for i in items}
        reference = references[earlier.set_id]
        for item in store.gates.load_gate_items(earlier.id):
            key = item.key
            if key in found or key not in wanted or key not in reference or reference[key] != wanted[key]:
                continue
            outcome: dict[str, Any] = item.payload.get("outcome") or {}
            if outcome.get("error") is None and item.payload.get("judge"):
                found.add(key)
    return found


def estimate_gate(
    store: Store,
    todo: Sequence[SetItem],
    judge_name: str,
    prices: Mapping[str, Price] | None = None,
    *,
    gate: GateRecord | None = None,
    targets: Mapping[str, TargetConfig] | None = None,
) -> GateEstimate:
    """The estimate for running ``todo`` with the pairwise judge ``judge_name`` (``provider:model``): two
    orders per item, plus one FIT call per item with a reviewer's answer, less the cached ones; and, given the
    ``gate`` being planned and both sides' ``targets`` configurations, the target calls."""
    per_item = {i.key: 2 + (1 if i.candidate.reference_answer else 0) for i in todo}
    calls = sum(per_item.values())
    cached = 0
    if gate is not None and targets is not None and all(deterministic(targets.get(s)) for s in SIDES):
        cached = sum(per_item[k] for k in cached_keys(store, gate, todo))
    measured = measured_tokens(store, judge_name)
    if measured is not None:
        per_in, per_out, n = measured
        basis = f"measured over {n} judge calls of earlier gates"
    else:
        per_in, per_out = float(ASSUMED_INPUT_TOKENS), float(ASSUMED_OUTPUT_TOKENS)
        basis = f"assumed {ASSUMED_INPUT_TOKENS} input + {ASSUMED_OUTPUT_TOKENS} output tokens per call"
    usage = TokenUsage(input=round(per_in * (calls - cached)), output=round(per_out * (calls - cached)))
    price = lookup_price(judge_name, prices)
    if judge_name.startswith("local"):
        price = Price(0.0, 0.0)
    cost = None if price is None else price.cost(usage)
    sides: tuple[TargetCost, ...] = ()
    if gate is not None and targets is not None:
        sides = tuple(
            target_cost(
                store,
                side,
                str(gate.config.get(side, {}).get("name", side)),
                str(gate.config.get(side, {}).get("version", "")),
                targets[side],
                len(todo),
                prices,
            )
            for side in SIDES
        )
    return GateEstimate(len(todo), calls, usage.input, usage.output, cost, basis, cached, sides)
