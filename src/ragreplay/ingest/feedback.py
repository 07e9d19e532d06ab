"""Read the many ways logs spell a user's thumbs up or down."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ragreplay.core.types import Feedback

_GOOD_WORDS = ("good", "up", "thumbs_up", "like", "positive", "true", "👍")
_BAD_WORDS = ("bad", "down", "thumbs_down", "dislike", "negative", "false", "👎")
_NONE_WORDS = ("", "none", "null")

_WORDS: dict[str, Feedback | None] = {
    **{w: Feedback.GOOD for w in _GOOD_WORDS},
    **{w: Feedback.BAD for w in _BAD_WORDS},
    **{w: None for w in _NONE_WORDS},
}

ACCEPTED_VALUES = (
    "good/bad, up/down, thumbs_up/thumbs_down, like/dislike, positive/negative, 1/0, +1/-1, true/false "
    '(any case; null, "" or none mean no feedback)'
)


class FeedbackValueError(ValueError):
    """A feedback value none of the accepted spellings, synonyms or the rating threshold can read."""

    def __init__(self, value: object, rating_threshold: float | None) -> None:
        self.value = value
        if rating_threshold is None:
            fix = (
                "use one of the accepted values, add the spelling under 'feedback_synonyms' in the field "
                "mapping (e.g. feedback_synonyms: {meh: bad}), or, for numeric ratings such as 1..5, "
                "set 'rating_threshold' (e.g. 4: ratings >= 4 are good)"
            )
        else:
            fix = (
                f"ratings are numbers (>= {rating_threshold:g} is good); add other spellings under "
                "'feedback_synonyms' in the field mapping"
            )
        self.fix = fix
        super().__init__(f"unknown feedback value {value!r}; accepted: {ACCEPTED_VALUES}")


def _word(text: str) -> str:
    return text.strip().lower().replace("-", "_").replace(" ", "_")


def _from_number(number: float, rating_threshold: float | None, raw: object) -> Feedback:
    if not math.isfinite(number):
        raise FeedbackValueError(raw, rating_threshold)
    if rating_threshold is not None:
        return Feedback.GOOD if number >= rating_threshold else Feedback.BAD
    if number == 1:
        return Feedback.GOOD
    if number in (0, -1):
        return Feedback.BAD
    raise FeedbackValueError(raw, rating_threshold)


def parse_feedback(
    value: object,
    *,
    synonyms: Mapping[str, Feedback | None] | None = None,
    rating_threshold: float | None = None,
) -> Feedback | None:
    """Read a feedback value from a log; ``None`` means the message carries no feedback.

    Strings are matched case-insensitively (``thumbs-up``, ``Thumbs Up`` and ``thumbs_up`` are the same),
    after the user's ``synonyms``. Booleans are good/bad. Numbers (and numeric strings) are ratings when
    ``rating_threshold`` is set (``>= threshold`` is good), otherwise only 1 (good), 0 and -1 (bad) are read.
    Raises :class:`FeedbackValueError` for anything else.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return Feedback.GOOD if value else Feedback.BAD
    if isinstance(value, int | float):
        return _from_number(float(value), rating_threshold, value)
    if not isinstance(value, str):
        raise FeedbackValueError(value, rating_threshold)
    if not synonyms and value in _WORDS:  # the common case, without building normalised copies
        return _WORDS[value]
    text = value.strip().lower()
    word = _word(text)
    if synonyms:
        for spelling, meaning in synonyms.items():
            if _word(spelling) == word:
                return meaning
    if text in _NONE_WORDS:
        return None
    try:
        number = float(text)
    except ValueError:
        if word in _WORDS:
            return _WORDS[word]
        raise FeedbackValueError(value, rating_threshold) from None
    return _from_number(number, rating_threshold, value)
