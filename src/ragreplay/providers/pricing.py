"""Token prices and the cost of a model call.

Prices are US dollars per million tokens. The built-in table covers common OpenAI models; a config file can
add or override entries (keyed by ``provider:model`` or by the bare model name). Unknown models cost 0 and
the caller may warn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import Field
from pydantic.dataclasses import dataclass

from ragreplay.core.types import TokenUsage


@dataclass(frozen=True)
class Price:
    """What a model charges, in USD per million input and output tokens."""

    input_per_mtok: Annotated[float, Field(ge=0)]
    output_per_mtok: Annotated[float, Field(ge=0)]

    def cost(self, usage: TokenUsage) -> float:
        """Dollars for ``usage`` tokens at this price."""
        return (usage.input * self.input_per_mtok + usage.output * self.output_per_mtok) / 1_000_000


FREE = Price(0.0, 0.0)

# USD per million tokens, standard (non-batch) tier.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
}

_FREE_PROVIDERS = frozenset({"fake"})
_DATED_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_table(overrides: Mapping[str, Price] | None = None) -> dict[str, Price]:
    """The built-in table with ``overrides`` applied on top."""
    table = dict(DEFAULT_PRICES)
    table.update(overrides or {})
    return table


def lookup_price(model_name: str, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model_name`` (``provider:model`` or a bare model), or ``None`` when unknown.

    Looks up the full spec first, then the bare model, then the model without a dated snapshot suffix
    (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``). Fake models are free.
    """
    table = DEFAULT_PRICES if table is None else table
    provider, sep, model = model_name.partition(":")
    if not sep:
        provider, model = "", model_name
    for key in (model_name, model, _DATED_SNAPSHOT.sub("", model)):
        if key in table:
            return table[key]
    if provider in _FREE_PROVIDERS:
        return FREE
    return None


def cost_usd(model_name: str, usage: TokenUsage, table: Mapping[str, Price] | None = None) -> float:
    """Dollars spent on ``usage`` tokens of ``model_name``; 0 when the model's price is unknown."""
    price = lookup_price(model_name, table)
    if price is None:
        return 0.0
    return price.cost(usage)
