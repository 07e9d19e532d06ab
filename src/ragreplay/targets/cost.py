"""Whether a target's answers carry a cost that can be trusted: a fake, a logged period and the built-in RAG
answering extractively make no model call (free); the built-in RAG generating with a model is priced when the
model's price is known; an HTTP target reports its cost only with a ``cost_path``; a Python function's answer
is priced only when it reports a cost above 0. Otherwise the price is unknown: ``None``, never a made-up $0."""

from __future__ import annotations

from dataclasses import dataclass

from ragreplay.core.types import Answer
from ragreplay.providers.pricing import lookup_price
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
    ``None`` (known when an answer reports a cost above 0); ``basis`` says why, for reports."""

    known: bool | None
    basis: str

    def cost_of(self, answer: Answer) -> float | None:
        """The answer's cost, or ``None`` when its price is unknown."""
        if self.known is True or (self.known is None and answer.cost_usd > 0):
            return answer.cost_usd
        return None


def target_pricing(cfg: TargetConfig) -> TargetPricing:
    """The pricing of answers of a target of configuration ``cfg`` (see the module docstring). A generating
    built-in RAG builds its model with the built-in price table, so its price is looked up there."""
    if isinstance(cfg, FakeTargetConfig):
        return TargetPricing(True, "fake target, no model")
    if isinstance(cfg, LoggedTargetConfig):
        return TargetPricing(True, "answers read from a log, no call")
    if isinstance(cfg, BuiltinTargetConfig):
        model = cfg.answer.model
        if cfg.answer.mode != "generate" or model is None:
            return TargetPricing(True, "built-in extractive RAG, no model")
        if lookup_price(model) is None:
            return TargetPricing(False, f"no price for {model}: set `prices:`")
        return TargetPricing(True, f"{model} at its price")
    if isinstance(cfg, HttpTargetConfig):
        if cfg.cost_path is None:
            return TargetPricing(False, "the HTTP target reports no cost: set its cost_path")
        return TargetPricing(True, f"reported by the HTTP target ({cfg.cost_path})")
    return TargetPricing(None, "reported by the function (unknown when it reports none)")
