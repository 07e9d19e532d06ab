"""Token prices and call costs: the shipped table (from LiteLLM's cost map), spellings, overrides, unknowns."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragreplay.core.types import TokenUsage
from ragreplay.providers.config import ModelSettings
from ragreplay.providers.pricing import (
    FREE,
    Price,
    builtin_prices,
    cost_usd,
    lookup_price,
    price_table,
    spellings,
    table_document,
)

ROOT = Path(__file__).resolve().parents[2]


def test_cost_of_a_known_model() -> None:
    usage = TokenUsage(input=1_000_000, output=500_000)
    assert cost_usd("openai:gpt-4o-mini", usage) == pytest.approx(0.15 + 0.30)
    assert cost_usd("gpt-4.1", TokenUsage(input=2000, output=1000)) == pytest.approx(
        (2000 * 2 + 1000 * 8) / 1e6
    )


def test_the_table_names_its_source_licence_version_and_date() -> None:
    document = table_document()
    assert "LiteLLM" in document["source"] and document["license"].startswith("MIT")
    assert document["litellm_version"] and document["generated"][:2] == "20"
    counts = {provider: len(models) for provider, models in document["prices"].items()}
    for provider in ("openai", "anthropic", "azure", "gemini", "mistral", "deepseek"):
        assert counts[provider] >= 5, provider
    assert sum(counts.values()) > 300  # far more than the five hand-typed models it replaced


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini"])
def test_common_openai_models_are_priced_output_above_input(model: str) -> None:
    price = builtin_prices()[f"openai:{model}"]
    assert price.output_per_mtok > price.input_per_mtok > 0
    assert builtin_prices()[model] == price  # and by bare name


def test_every_shipped_price_is_a_valid_price() -> None:
    for key, price in builtin_prices().items():
        assert price.input_per_mtok >= 0 and price.output_per_mtok >= 0, key


def test_anthropic_azure_and_litellm_specs_find_their_vendor_price() -> None:
    sections = table_document()["prices"]
    claude = next(model for model in sections["anthropic"] if "sonnet" in model)
    expected = Price(*sections["anthropic"][claude])
    assert lookup_price(f"anthropic:{claude}") == expected
    assert lookup_price(f"litellm:anthropic/{claude}") == expected
    assert lookup_price(claude) == expected  # bare name
    assert lookup_price("azure:gpt-4o") == Price(*sections["azure"]["gpt-4o"])
    assert lookup_price("litellm:gpt-4o-mini") == lookup_price("openai:gpt-4o-mini")
    mistral = next(iter(sections["mistral"]))
    assert lookup_price(f"litellm:mistral/{mistral}") == Price(*sections["mistral"][mistral])


def test_dated_snapshots_and_latest_use_their_family_price() -> None:
    table = price_table({"claude-x-9": Price(1.0, 2.0), "mistral-y": Price(3.0, 4.0)})
    assert lookup_price("openai:gpt-4o-mini-2031-07-18") == lookup_price("openai:gpt-4o-mini")
    assert lookup_price("anthropic:claude-x-9-20310101", table) == Price(1.0, 2.0)
    assert lookup_price("litellm:vertex_ai/claude-x-9@20310101", table) == Price(1.0, 2.0)
    assert lookup_price("mistral:mistral-y-latest", table) == Price(3.0, 4.0)
    assert spellings("litellm:anthropic/claude-x-9-20310101") == [
        "litellm:anthropic/claude-x-9-20310101",
        "litellm:anthropic/claude-x-9",
        "anthropic:claude-x-9-20310101",
        "anthropic:claude-x-9",
        "claude-x-9-20310101",
        "claude-x-9",
    ]


def test_unknown_models_have_no_price_never_zero() -> None:
    usage = TokenUsage(input=10_000, output=10_000)
    for name in ("openai:gpt-unknown-7", "azure:my-deployment", "litellm:someone/model", "mystery-model"):
        assert lookup_price(name) is None, name
        assert cost_usd(name, usage) is None, name


@pytest.mark.parametrize("spec", ["fake:judge", "ollama:llama3.1", "vllm:qwen", "llamacpp:x", "lmstudio:y"])
def test_fakes_and_local_servers_are_free(spec: str) -> None:
    assert lookup_price(spec) == FREE
    assert cost_usd(spec, TokenUsage(input=10_000, output=10_000)) == 0.0
    assert lookup_price(f"litellm:{spec.replace(':', '/')}") == FREE


def test_overrides_come_before_every_builtin_spelling() -> None:
    table = price_table({"gpt-4o": Price(1.0, 1.0), "azure:gpt-4o": Price(3.0, 3.0), "my-model": Price(5, 5)})
    usage = TokenUsage(input=1_000_000, output=0)
    assert cost_usd("openai:gpt-4o", usage, table) == pytest.approx(1.0)  # bare override beats openai:gpt-4o
    assert cost_usd("azure:gpt-4o", usage, table) == pytest.approx(3.0)
    assert cost_usd("vllm:my-model", usage, table) == pytest.approx(5.0)  # a local model priced by the user
    assert builtin_prices()["openai:gpt-4o"].input_per_mtok > 1.0  # the shipped table is not mutated
    assert table["my-model"] == Price(5, 5) and table["openai:gpt-4o"] == builtin_prices()["openai:gpt-4o"]
    assert len(table) == len(list(table))


def test_prices_validate_from_config() -> None:
    settings = ModelSettings.model_validate(
        {"prices": {"local:qwen": {"input_per_mtok": 0.1, "output_per_mtok": 0.2}}}
    )
    assert settings.prices["local:qwen"] == Price(0.1, 0.2)
    with pytest.raises(ValidationError):
        ModelSettings.model_validate({"prices": {"x:y": {"input_per_mtok": -1, "output_per_mtok": 0}}})


def test_the_script_extracts_chat_models_per_provider_per_million(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "update_model_prices", ROOT / "scripts" / "update_model_prices.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script
    spec.loader.exec_module(script)
    cost_map = {
        "sample_spec": {"mode": "chat", "litellm_provider": "one of ...", "input_cost_per_token": 0.0},
        "gpt-z": {
            "mode": "chat",
            "litellm_provider": "openai",
            "input_cost_per_token": 2.5e-06,
            "output_cost_per_token": 1e-05,
        },
        "anthropic/claude-z": {
            "mode": "chat",
            "litellm_provider": "anthropic",
            "input_cost_per_token": 3e-06,
            "output_cost_per_token": 1.5e-05,
        },
        "text-embedding-z": {
            "mode": "embedding",
            "litellm_provider": "openai",
            "input_cost_per_token": 1e-07,
            "output_cost_per_token": 0,
        },
        "fireworks_ai/x": {
            "mode": "chat",
            "litellm_provider": "fireworks_ai",
            "input_cost_per_token": 1e-07,
            "output_cost_per_token": 1e-07,
        },
        "gpt-no-output-price": {"mode": "chat", "litellm_provider": "openai", "input_cost_per_token": 1e-06},
    }
    source = tmp_path / "map.json"
    source.write_text(json.dumps(cost_map))
    out = tmp_path / "prices.json"
    script.main(["--source", str(source), "--version", "9.9.9", "--out", str(out)])
    document = json.loads(out.read_text())
    assert document["prices"] == {"anthropic": {"claude-z": [3.0, 15.0]}, "openai": {"gpt-z": [2.5, 10.0]}}
    assert document["litellm_version"] == "9.9.9" and document["license"].startswith("MIT")
