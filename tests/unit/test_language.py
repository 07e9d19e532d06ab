"""Language detection for the wrong-language flags (py3langid's model, issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragreplay.compare.checks import expected_language, is_wrong_language
from ragreplay.judges.language import (
    MAX_CHARS,
    detect_language,
    in_other_language,
    is_supported,
    supported_languages,
)

SENTENCES = {
    "en": [
        "How many days of annual leave do I get after my probation?",
        "You get 25 days of annual leave per year, plus the public holidays.",
        "The bonus is paid in March for the previous year.",
    ],
    "nl": [
        "Hoeveel vakantiedagen krijg ik na mijn proeftijd?",
        "Je hebt recht op 25 vakantiedagen per jaar, naast de feestdagen.",
        "De bonus wordt in maart uitbetaald voor het vorige jaar.",
    ],
    "fr": [
        "Combien de jours de congés payés ai-je après ma période d'essai ?",
        "Vous avez droit à 25 jours de congés par an, en plus des jours fériés.",
        "La prime est versée en mars pour l'année précédente.",
    ],
    "es": [
        "¿Cuántos días de vacaciones tengo después del periodo de prueba?",
        "Tienes derecho a 25 días de vacaciones al año, además de los festivos.",
        "La prima se paga en marzo por el año anterior.",
    ],
    "de": [
        "Wie viele Urlaubstage bekomme ich nach der Probezeit?",
        "Du hast Anspruch auf 25 Urlaubstage im Jahr, zusätzlich zu den Feiertagen.",
        "Der Bonus wird im März für das vergangene Jahr ausgezahlt.",
    ],
}


@pytest.mark.parametrize(
    ("language", "text"), [(lang, text) for lang, texts in SENTENCES.items() for text in texts]
)
def test_sentences_of_five_languages(language: str, text: str) -> None:
    assert detect_language(text) == language


@pytest.mark.parametrize(
    "text",
    ["", "OK", "ok", "42", "25.", "€2,45", "1945-1950", "Ja.", "Yes.", "Thanks", "25 days", "Old Trafford"],
)
def test_short_text_or_a_number_is_unknown(text: str) -> None:
    assert detect_language(text) is None
    assert not in_other_language(text, "nl")


def test_unsure_between_close_languages_is_unknown() -> None:
    # Afrikaans and Dutch share these words: the model gives each about one half, so no guess.
    assert detect_language("Zie het handboek.") is None


def test_code_switched_text_is_unknown_or_the_dominant_language() -> None:
    dutch = "Reis je met het openbaar vervoer, dan krijg je een NS Business Card van de werkgever."
    english = "Employees who travel more than four times a year can request a corporate card."
    assert detect_language(f"{dutch} {english}") is None
    assert detect_language(f"{english} {dutch}") is None
    long_dutch = (
        "Werk je parttime, dan reken je naar rato: bij 24 uur per week mag je 14,4 uur thuiswerken. "
        "Voor een fulltimer is dat drie dagen per week, in overleg met je leidinggevende. "
        "Thuiswerken vraag je aan in het personeelsportaal, uiterlijk een week van tevoren."
    )
    assert detect_language(f"{long_dutch} Ask HR for the form.") == "nl"
    # one sentence with an English term in it stays Dutch
    assert detect_language("Je kunt de bonusregeling vinden op het intranet onder het kopje policy.") == "nl"


def test_in_other_language_agrees_with_detect_language() -> None:
    mixed = (
        "Reis je met het openbaar vervoer, dan krijg je een NS Business Card van de werkgever. "
        "Employees who travel more than four times a year can request a corporate card."
    )
    texts = [*[t for ts in SENTENCES.values() for t in ts], mixed, "OK", "Zie het handboek."]
    for text in texts:
        for expected in ("en", "nl", "fr"):
            found = detect_language(text)
            assert in_other_language(text, expected) == (found is not None and found != expected), text


def test_only_the_start_of_a_long_text_is_read() -> None:
    text = "Je hebt recht op 25 vakantiedagen per jaar. " * (MAX_CHARS // 40) + "You get 25 days. " * 2000
    assert detect_language(text) == "nl"


def test_supported_languages_are_the_models_list() -> None:
    codes = supported_languages()
    assert len(codes) >= 97 and list(codes) == sorted(codes)
    assert {"en", "nl", "de", "fr", "es", "it", "pt", "pl", "zh", "ja", "ar"} <= set(codes)
    assert "zxx" not in codes and is_supported("nl") and not is_supported("xx")


def test_reports_flag_a_french_or_spanish_answer_to_a_dutch_question() -> None:
    question = "Hoeveel vakantiedagen krijg ik na mijn proeftijd?"
    expected = expected_language(question, {})
    assert expected == "nl"
    assert is_wrong_language(SENTENCES["fr"][1], expected)
    assert is_wrong_language(SENTENCES["es"][1] + " [verlof-nl#2]", expected)
    assert not is_wrong_language(SENTENCES["nl"][1] + " [verlof-nl#2]", expected)
    assert not is_wrong_language("OK", expected) and not is_wrong_language("42", expected)


def test_language_tags_with_a_region_or_capitals() -> None:
    assert expected_language("How many days?", {"language": "nl-BE"}) == "nl"
    assert expected_language("How many days?", {"language": "FR"}) == "fr"
    assert expected_language("How many days of leave do I get per year?", {"language": "klingon"}) == "en"


LAZY_PROBE = """
import json, sys
from ragreplay.compare import checks
from ragreplay.judges import hygiene, language
before = "py3langid" in sys.modules
found = checks.detect_language("Hoeveel vakantiedagen krijg ik na mijn proeftijd?")
print(json.dumps({"before": before, "after": "py3langid" in sys.modules, "found": found}))
"""


def test_the_library_is_imported_on_first_detection_only() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"before": False, "after": True, "found": "nl"}
