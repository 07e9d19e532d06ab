"""Token prices and the cost of a model call.

Prices are US dollars per million tokens. The built-in table (``providers/data/model_prices.json``) holds the
chat models of the main providers, extracted from LiteLLM's maintained model cost map (MIT licence) by
``scripts/update_model_prices.py``; the file names its source, LiteLLM's version and the date. A config file's
``prices:`` (keyed by ``provider:model`` or by the bare model name) come first. A model found nowhere has no
price (``None``): its cost is "price unknown", never a made-up $0. The fake and the local servers (Ollama,
vLLM, llama.cpp, LM Studio) are free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from importlib.resources import files
from typing import Annotated, Any

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
FREE_PROVIDERS = frozenset({"fake", "ollama", "vllm", "llamacpp", "lmstudio"})
"""Providers whose tokens cost nothing: the fake and the servers on the user's machine."""
BARE_NAME_PROVIDERS = ("openai", "anthropic", "gemini", "mistral", "deepseek", "xai", "cohere")
"""The vendors whose models the table also knows by bare name (``gpt-4o``), the first listing one wins."""
VENDOR_ALIASES = {"cohere_chat": "cohere", "vertex_ai": "vertex_ai", "hosted_vllm": "vllm"}
"""LiteLLM's vendor prefixes (``litellm:cohere_chat/command-r``) spelled as in the table, where they differ."""

_SNAPSHOT_SUFFIXES = (
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # gpt-4o-mini-2024-07-18
    re.compile(r"[-@]\d{8}$"),  # claude-sonnet-4-5-20250929, claude-...@20250929 (Vertex AI)
    re.compile(r"-latest$"),  # mistral-large-latest
)


@cache
def table_document() -> dict[str, Any]:
    """The shipped price table as read: source, licence, LiteLLM version, date and ``prices``."""
    text = files("ragreplay.providers").joinpath("data/model_prices.json").read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@cache
def builtin_prices() -> dict[str, Price]:
    """The shipped table, keyed ``provider:model`` and, for :data:`BARE_NAME_PROVIDERS`, by bare model."""
    sections: dict[str, dict[str, list[float]]] = table_document()["prices"]
    table = {
        f"{provider}:{model}": Price(*pair)
        for provider, models in sections.items()
        for model, pair in models.items()
    }
    for provider in reversed(BARE_NAME_PROVIDERS):
        table.update({model: table[f"{provider}:{model}"] for model in sections.get(provider, {})})
    return table


class PriceTable(Mapping[str, Price]):
    """The config file's ``prices:`` over the built-in table: :func:`lookup_price` tries every spelling of a
    name in the overrides before any in the built-in table, so a bare-name override beats a built-in
    ``provider:model`` entry."""

    def __init__(self, overrides: Mapping[str, Price], builtin: Mapping[str, Price]) -> None:
        self.overrides = dict(overrides)
        self.builtin = builtin

    def __getitem__(self, key: str) -> Price:
        return self.overrides[key] if key in self.overrides else self.builtin[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.overrides
        yield from (key for key in self.builtin if key not in self.overrides)

    def __len__(self) -> int:
        return len(self.overrides) + sum(1 for key in self.builtin if key not in self.overrides)


def price_table(overrides: Mapping[str, Price] | None = None) -> PriceTable:
    """The built-in table with ``overrides`` (the config file's ``prices:``) looked up first."""
    return PriceTable(overrides or {}, builtin_prices())


def spellings(model_name: str) -> list[str]:
    """The keys a model may be priced under, most specific first: ``provider:model``, then the model's vendor
    and name (a LiteLLM model ``vendor/model`` or an Azure deployment's model), then the bare model, each
    also without a dated snapshot or ``-latest`` suffix."""
    provider, sep, model = model_name.partition(":")
    if not sep:
        provider, model = "", model_name
    names = [model_name] if sep else []
    vendor, slash, rest = model.partition("/")
    if provider == "litellm" and slash:
        names.append(f"{VENDOR_ALIASES.get(vendor, vendor)}:{rest}")
        model = rest
    names.append(model)
    keys: list[str] = []
    for name in names:
        keys.append(name)
        keys.extend(pattern.sub("", name) for pattern in _SNAPSHOT_SUFFIXES if pattern.search(name))
    return list(dict.fromkeys(keys))


def _vendor(model_name: str) -> str:
    provider, _, model = model_name.partition(":")
    if provider == "litellm":
        vendor, slash, _ = model.partition("/")
        return VENDOR_ALIASES.get(vendor, vendor) if slash else ""
    return provider


def lookup_price(model_name: str, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model_name`` (``provider:model`` or a bare model), or ``None`` when unknown.

    ``table`` is a :func:`price_table` (overrides first, then the built-in table), any other mapping (searched
    alone) or ``None`` (the built-in table). See :func:`spellings` for the keys tried. Models of
    :data:`FREE_PROVIDERS` not found are free.
    """
    layers: list[Mapping[str, Price]]
    if isinstance(table, PriceTable):
        layers = [table.overrides, table.builtin]
    else:
        layers = [builtin_prices() if table is None else table]
    keys = spellings(model_name)
    for layer in layers:
        for key in keys:
            if key in layer:
                return layer[key]
    if _vendor(model_name) in FREE_PROVIDERS:
        return FREE
    return None


def cost_usd(model_name: str, usage: TokenUsage, table: Mapping[str, Price] | None = None) -> float | None:
    """Dollars spent on ``usage`` tokens of ``model_name``; ``None`` when the model's price is unknown."""
    price = lookup_price(model_name, table)
    return None if price is None else price.cost(usage)
