"""Small English and Dutch word lists the rule-based parts share."""

from __future__ import annotations

ENGLISH_PRONOUNS = frozenset(
    ["he", "she", "it", "they", "him", "her", "its", "their", "them", "this", "that", "those", "there"]
)
DUTCH_PRONOUNS = frozenset(["hij", "zij", "ze", "het", "hem", "haar", "hun", "dat", "die", "deze", "daar"])
PRONOUNS = ENGLISH_PRONOUNS | DUTCH_PRONOUNS

FOLLOW_UP_OPENERS = (
    "and ",
    "what about",
    "how about",
    "also ",
    "or ",
    "same for",
    "and if",
    "but ",
    "en ",
    "en als",
    "wat als",
    "hoe zit het met",
    "ook ",
    "of ",
    "maar ",
    "geldt dat",
    "geldt dit",
)
"""How a question that leans on the previous one often starts (lowercase, trailing space where it matters)."""

ROLE_WORDS: dict[str, str] = {
    **dict.fromkeys(["hr", "p&o", "personnel", "personeelszaken", "personalabteilung", "personal"], "hr"),
    **dict.fromkeys(
        ["manager", "supervisor", "leidinggevende", "vorgesetzte", "vorgesetzter", "chef"], "manager"
    ),
    **dict.fromkeys(["employer", "werkgever", "arbeitgeber"], "employer"),
    **dict.fromkeys(["employee", "werknemer", "medewerker", "arbeitnehmer", "mitarbeiter"], "employee"),
    **dict.fromkeys(["director", "directeur", "direktor", "ceo"], "director"),
    **dict.fromkeys(["colleague", "collega", "kollege", "kollegin"], "colleague"),
    **dict.fromkeys(["payroll", "salarisadministratie", "lohnbuchhaltung"], "payroll"),
}
"""Who does something in a workplace answer (English, Dutch, German), mapped to one role each."""

PERMITTED = frozenset(
    "allowed permitted may can authorised authorized toegestaan toegelaten mag mogen kan kunnen erlaubt gestattet "
    "zulässig darf dürfen kann".split()
)
"""Words that grant: a statement with one says something may be done."""

FORBIDDEN = frozenset(
    "forbidden prohibited banned disallowed cannot can't unauthorised unauthorized verboden ongeoorloofd "
    "verboten untersagt unzulässig".split()
)
"""Words that deny: a statement with one says something may not be done."""

GERMAN_NEGATIONS = frozenset("nicht kein keine keinen keiner nie niemals nichts niemand".split())
"""German words that flip a statement (the English and Dutch ones live with the FIT signals)."""

ECHO_WORDS = frozenset(
    "you asked ask asking question your about regarding re je vroeg vraag over du hast gefragt frage über".split()
)
"""Words a reply that only restates the question adds to it ("You asked: ...", "Je vroeg: ...")."""
