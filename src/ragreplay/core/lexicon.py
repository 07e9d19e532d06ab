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
