"""How a target's answers are priced, the one rule that eval tracing and the gate's estimate share: a fake, a
logged period and the built-in RAG answering extractively make no model call (free); the built-in RAG
generating with a model is priced when the model's price is known (the config's ``prices:`` first, then the
built-in table); an HTTP target reports its cost only with a ``cost_path``; a Python function's answer is
priced only when it reports a cost above 0. Otherwise the price is unknown: ``None``, never a made-up $0. An
answer whose model calls had no price (``Answer.unpriced_calls``) is unknown too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ragreplay.core.types import Answer
from ragreplay.providers.pricing import Price, lookup_price
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.config import (
    FakeTargetConfig,
    HttpTargetConfig,
    LoggedTargetConfig,
    TargetConfig,
)


@dataclass(frozen=True)
class TargetPricing:
    """How a target's answers are priced: ``known`` True (their cost is right, 0 included), False (unknown),
    ``None`` (known when an answer reports a cost above 0); ``basis`` says why, for reports; ``free``: no
    model call at all; ``price``: the generating model's price, when it has one."""

    known: bool | None
    basis: str
    free: bool = False
    price: Price | None = None

    def cost_of(self, answer: Answer) -> float | None:
        """The answer's cost, or ``None`` when its price is unknown."""
        if answer.unpriced_calls:
            return None
        if self.known is True or (self.known is None and answer.cost_usd > 0):
            return answer.cost_usd
        return None


def target_pricing(cfg: TargetConfig, prices: Mapping[str, Price] | None = None) -> TargetPricing:
    """The pricing of answers of a target of configuration ``cfg`` (see the module docstring); ``prices`` is
    the config's price table (``providers/pricing.price_table``), the built-in table when ``None``."""
    if isinstance(cfg, FakeTargetConfig):
        return TargetPricing(True, "fake target, no model", free=True)
    if isinstance(cfg, LoggedTargetConfig):
        return TargetPricing(True, "answers read from a log, no call", free=True)
    if isinstance(cfg, BuiltinTargetConfig):
        model = cfg.answer.model
        if cfg.answer.mode != "generate" or model is None:
            return TargetPricing(True, "built-in extractive RAG, no model", free=True)
        price = lookup_price(model, prices)
        if price is None:
            return TargetPricing(False, f"no price for {model}: set `prices:`")
        return TargetPricing(True, f"{model} at its price", price=price)
    if isinstance(cfg, HttpTargetConfig):
        if cfg.cost_path is None:
            return TargetPricing(False, "the HTTP target reports no cost: set its cost_path")
        return TargetPricing(True, f"reported by the HTTP target ({cfg.cost_path})")
    return TargetPricing(None, "reported by the function (unknown when it reports none)")
