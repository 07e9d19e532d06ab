"""Token prices and call costs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragreplay.core.types import TokenUsage
from ragreplay.providers.config import ModelSettings
from ragreplay.providers.pricing import DEFAULT_PRICES, Price, cost_usd, lookup_price, price_table


def test_cost_of_a_known_model() -> None:
    usage = TokenUsage(input=1_000_000, output=500_000)
    assert cost_usd("openai:gpt-4o-mini", usage) == pytest.approx(0.15 + 0.30)
    assert cost_usd("gpt-4.1", TokenUsage(input=2000, output=1000)) == pytest.approx(
        (2000 * 2 + 1000 * 8) / 1e6
    )


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini"])
def test_builtin_table_prices_common_openai_models(model: str) -> None:
    price = DEFAULT_PRICES[model]
    assert price.output_per_mtok > price.input_per_mtok > 0


def test_dated_snapshots_use_their_family_price() -> None:
    assert lookup_price("openai:gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]


def test_unknown_models_cost_nothing_and_fakes_are_free() -> None:
    usage = TokenUsage(input=10_000, output=10_000)
    assert lookup_price("vllm:llama-3-8b") is None
    assert cost_usd("vllm:llama-3-8b", usage) == 0.0
    assert lookup_price("fake:judge") == Price(0, 0)
    assert cost_usd("fake:judge", usage) == 0.0


def test_overrides_by_spec_beat_overrides_by_model_and_defaults() -> None:
    table = price_table({"gpt-4o": Price(1.0, 1.0), "azure:gpt-4o": Price(3.0, 3.0)})
    usage = TokenUsage(input=1_000_000, output=0)
    assert cost_usd("openai:gpt-4o", usage, table) == pytest.approx(1.0)
    assert cost_usd("azure:gpt-4o", usage, table) == pytest.approx(3.0)
    assert DEFAULT_PRICES["gpt-4o"].input_per_mtok == 2.5  # the defaults are not mutated


def test_prices_validate_from_config() -> None:
    settings = ModelSettings.model_validate(
        {"prices": {"local:qwen": {"input_per_mtok": 0.1, "output_per_mtok": 0.2}}}
    )
    assert settings.prices["local:qwen"] == Price(0.1, 0.2)
    with pytest.raises(ValidationError):
        ModelSettings.model_validate({"prices": {"x:y": {"input_per_mtok": -1, "output_per_mtok": 0}}})
