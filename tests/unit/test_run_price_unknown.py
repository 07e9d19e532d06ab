"""`ragreplay run`'s progress never passes an unpriced model's calls off as $0: it says "price unknown"."""

from __future__ import annotations

from ragreplay.cli.run_cmd import unpriced_note
from ragreplay.providers.pricing import Price
from ragreplay.settings import Settings


def test_the_note_names_the_models_without_a_price() -> None:
    settings = Settings(judge="openai:gpt-from-the-future", rewriter="azure:my-deployment")
    assert unpriced_note(settings) == " + price unknown (openai:gpt-from-the-future, azure:my-deployment)"
    assert (
        unpriced_note(Settings(judge="openai:gpt-from-the-future"))
        == " + price unknown (openai:gpt-from-the-future)"
    )


def test_priced_free_and_local_models_need_no_note() -> None:
    for judge in ("openai:gpt-4o-mini", "fake:default", "ollama:llama3.1", "local"):
        assert unpriced_note(Settings(judge=judge)) == "", judge
    priced = Settings(judge="azure:my-deployment", prices={"azure:my-deployment": Price(1.0, 2.0)})
    assert unpriced_note(priced) == ""
