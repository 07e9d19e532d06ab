"""Judging hygiene: same-family judge warnings, wrong-language answers and the FIT judge's EN/NL word rule."""

from __future__ import annotations

import pytest

from ragreplay.judges.hygiene import detect_en_nl, model_family, same_family, wrong_language


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("openai:gpt-4.1", "gpt"),
        ("openai:gpt-4.1-mini", "gpt"),
        ("azure:gpt-4o", "gpt"),
        ("openai:chatgpt-4o-latest", "gpt"),
        ("openai:ft:gpt-4o-mini:acme::abc123", "gpt"),
        ("anthropic:claude-3-5-sonnet-20241022", "claude"),
        ("bedrock:us.anthropic.claude-sonnet-4-v1:0", "claude"),
        ("together:meta-llama/Meta-Llama-3.1-70B-Instruct", "llama"),
        ("ollama:llama3:8b", "llama"),
        ("groq:llama-3.3-70b-versatile", "llama"),
        ("vllm:Qwen/Qwen2.5-72B-Instruct", "qwen"),
        ("ollama:qwq:32b", "qwen"),
        ("mistral:mistral-large-latest", "mistral"),
        ("mistral:mixtral-8x7b", "mistral"),
        ("google:gemini-1.5-pro", "gemini"),
        ("google:gemma-2-9b", "gemma"),
        ("local", None),
        ("local:fit", None),
        ("fake:default", None),
        ("openai:4o", None),
    ],
)
def test_model_family(spec: str, family: str | None) -> None:
    assert model_family(spec) == family


def test_same_family_warns_and_names_both() -> None:
    warning = same_family("openai:gpt-4.1", ["ollama:llama3:8b", "openai:gpt-4.1-mini"])
    assert warning is not None
    assert "openai:gpt-4.1 " in warning and "openai:gpt-4.1-mini" in warning and "'gpt'" in warning
    assert "llama3" not in warning and "Fix:" in warning
    several = same_family("anthropic:claude-sonnet-4", ["x:claude-3-haiku", "y:claude-opus-4"])
    assert several is not None and "generators x:claude-3-haiku, y:claude-opus-4" in several


@pytest.mark.parametrize(
    ("judge", "generators"),
    [
        ("openai:gpt-4.1", ["anthropic:claude-3-5-haiku", "ollama:llama3:8b"]),
        ("google:gemini-2.0-flash", ["google:gemma-2-9b"]),
        ("local", ["openai:gpt-4.1"]),
        ("fake:default", ["fake:default"]),
        ("openai:gpt-4.1", []),
    ],
)
def test_no_warning_across_families_or_for_rules(judge: str, generators: list[str]) -> None:
    assert same_family(judge, generators) is None


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("How many days of annual leave do I get after my probation?", "en"),
        ("The bonus is paid in March for the previous year.", "en"),
        ("Hoeveel vakantiedagen krijg ik na mijn proeftijd?", "nl"),
        ("De bonus wordt in maart uitbetaald voor het vorige jaar.", "nl"),
        ("Je hebt recht op 25 vakantiedagen per jaar.", "nl"),
        ("Ja.", None),
        ("25 days", None),
        ("", None),
        # Code-switched: an English question about Dutch policy terms, and the other way round.
        ("Can you explain the bonusregeling en de voorwaarden?", None),
        ("Wat is de policy for remote work in the UK?", None),
        ("Pourquoi le ciel est-il bleu?", None),
    ],
)
def test_en_nl_word_rule_of_the_fit_judge(text: str, language: str | None) -> None:
    assert detect_en_nl(text) == language


def test_dutch_words_shared_with_english_do_not_count() -> None:
    # in, is, was, we, of, die, door are both languages' words: they decide nothing.
    assert detect_en_nl("we was in of die door is") is None


def test_en_nl_word_rule_calls_french_dutch() -> None:
    # Why the reports no longer use it (issue 16): French "de", "en" are Dutch function words to it.
    assert (
        detect_en_nl("Vous avez droit à 25 jours de congés par an, en plus de deux jours de repos.") == "nl"
    )


def test_wrong_language() -> None:
    en_q = "How many days of annual leave do I get?"
    nl_q = "Hoeveel vakantiedagen krijg ik per jaar?"
    en_a = "You get 25 days of annual leave per year."
    nl_a = "Je krijgt 25 vakantiedagen per jaar, en dat is meer dan het minimum."
    assert wrong_language(en_q, nl_a) and wrong_language(nl_q, en_a)
    assert not wrong_language(en_q, en_a) and not wrong_language(nl_q, nl_a)
    assert not wrong_language(en_q, "25.")  # unsure answer: not flagged
    assert not wrong_language("Can you explain the bonusregeling en de voorwaarden?", nl_a)
    assert wrong_language(en_q, "Vous avez droit à 25 jours de congés payés par an.")
    assert wrong_language("Combien de jours de congés ai-je par an ?", en_a)
