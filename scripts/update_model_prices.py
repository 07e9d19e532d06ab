"""Regenerate ragreplay's price table from LiteLLM's model cost map.

LiteLLM (MIT licence, https://github.com/BerriAI/litellm) maintains ``model_prices_and_context_window.json``
and bundles a copy in its package as ``litellm/model_prices_and_context_window_backup.json`` (3.5 MB, every
mode and provider). This keeps the chat models of the main providers, input and output USD per million tokens,
in ``src/ragreplay/providers/data/model_prices.json`` (tens of KB), with the source, LiteLLM's version, the date
and the licence::

    python scripts/update_model_prices.py                       # from the installed litellm package
    pip download litellm --no-deps -d /tmp/l && python scripts/update_model_prices.py --source /tmp/l/*.whl
    python scripts/update_model_prices.py --source model_prices_and_context_window.json --version main
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "ragreplay" / "providers" / "data" / "model_prices.json"
BUNDLED = "model_prices_and_context_window_backup.json"

PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure",
    "gemini": "gemini",
    "vertex_ai-language-models": "vertex_ai",
    "mistral": "mistral",
    "deepseek": "deepseek",
    "xai": "xai",
    "groq": "groq",
    "cohere_chat": "cohere",
    "together_ai": "together_ai",
    "perplexity": "perplexity",
    "openrouter": "openrouter",
}
"""LiteLLM's ``litellm_provider`` of each section kept, and its name in ragreplay's table."""


def read_source(source: Path | None) -> tuple[dict[str, Any], str]:
    """The cost map and LiteLLM's version: from ``source`` (a JSON file or a litellm wheel) or the installed
    package (found without importing it)."""
    if source is not None and source.suffix == ".whl":
        version = source.name.split("-")[1]
        with zipfile.ZipFile(source) as wheel:
            return json.loads(wheel.read(f"litellm/{BUNDLED}")), version
    if source is not None:
        return json.loads(source.read_text()), "unknown"
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("litellm is not installed. Fix: pip install litellm, or pass --source FILE.json|litellm.whl")
    path = Path(next(iter(spec.submodule_search_locations))) / BUNDLED
    return json.loads(path.read_text()), importlib.metadata.version("litellm")


def per_million(value: Any) -> float | None:
    """USD per token as USD per million tokens (rounded to 6 decimals), ``None`` when not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return round(float(value) * 1_000_000, 6)


def extract(cost_map: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """``{provider: {model: [input, output]}}`` of the chat models of :data:`PROVIDERS`, sorted."""
    table: dict[str, dict[str, list[float]]] = {}
    for key, entry in cost_map.items():
        if not isinstance(entry, dict) or entry.get("mode") != "chat":
            continue
        provider = PROVIDERS.get(str(entry.get("litellm_provider")))
        price_in = per_million(entry.get("input_cost_per_token"))
        price_out = per_million(entry.get("output_cost_per_token"))
        if provider is None or price_in is None or price_out is None:
            continue
        model = re.sub(rf"^{re.escape(str(entry['litellm_provider']))}/", "", key)
        model = model.removeprefix(f"{provider}/")
        table.setdefault(provider, {})[model] = [price_in, price_out]
    return {provider: dict(sorted(models.items())) for provider, models in sorted(table.items())}


def render(document: dict[str, Any]) -> str:
    """The table as JSON with one model a line, so a regeneration's diff shows each price that changed."""
    head = {key: value for key, value in document.items() if key != "prices"}
    lines = ["{", *(f"{json.dumps(key)}: {json.dumps(value)}," for key, value in head.items()), '"prices": {']
    sections = []
    for provider, models in document["prices"].items():
        rows = ",\n".join(f"  {json.dumps(model)}: {json.dumps(price)}" for model, price in models.items())
        sections.append(f"{json.dumps(provider)}: {{\n{rows}\n}}")
    lines.append(",\n".join(sections))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, help="a cost map JSON or a litellm wheel [installed litellm]")
    parser.add_argument("--version", help="LiteLLM's version or commit the source comes from")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cost_map, version = read_source(args.source)
    prices = extract(cost_map)
    document = {
        "source": f"LiteLLM {BUNDLED} (https://github.com/BerriAI/litellm, model_prices_and_context_window.json)",
        "license": "MIT, Copyright (c) 2023 Berri AI",
        "litellm_version": args.version or version,
        "generated": datetime.now(UTC).date().isoformat(),
        "unit": "USD per million tokens: [input, output], standard tier",
        "regenerate": "python scripts/update_model_prices.py",
        "prices": prices,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(document))
    count = sum(len(models) for models in prices.values())
    print(
        f"{args.out}: {count} chat models of {len(prices)} providers from LiteLLM {document['litellm_version']}"
    )


if __name__ == "__main__":
    main()
