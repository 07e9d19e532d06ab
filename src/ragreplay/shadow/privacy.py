"""What the shadow does to personal data before a row leaves the process: hash user ids, redact queries.

Both are on by default. The default redactor replaces, in this order:

- payment card numbers (13 to 19 digits, grouped by spaces or dashes or not) that pass the Luhn check, with
  ``[CARD]``;
- IBANs in any case and grouping (``NL91 ABNA 0417 1643 00``, ``nl91abna0417164300``, dashes) that pass the
  ISO 7064 mod-97 check, with ``[IBAN]``;
- Dutch citizen service numbers (BSN: 9 digits, or ``1234.56.782``) that pass the 11-check, with ``[BSN]``;
- e-mail addresses (``name@host.tld``) with ``[EMAIL]``;
- IPv4 addresses with ``[IP]``;
- phone numbers: runs of digits, spaces, dots, dashes and brackets, optionally starting with ``+``, holding
  9 to 15 digits, with ``[PHONE]``; dates (``2024-01-01``, ``01-02-2024``), times, years and amounts stay.

The checksums keep ordinary numbers (order numbers, amounts) out. It is a safety net, not an anonymiser: names,
addresses and free-text identifiers pass through. A team with stricter needs points the shadow at its own
function with ``"module:function"`` (see :func:`load_redactor`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import os
import re
import secrets
from collections.abc import Callable
from typing import Protocol

from ragreplay.errors import ConfigError

SALT_ENV = "RAGREPLAY_SHADOW_SALT"


class Redactor(Protocol):
    """Turns a query into the text that may be stored."""

    def __call__(self, text: str) -> str:
        """The stored form of ``text``."""
        ...


def hash_user_id(user_id: str, salt: str) -> str:
    """A stable pseudonym for ``user_id``: hex HMAC-SHA256 keyed with ``salt``.

    The same id and salt always give the same hash, so per-user breakdowns still work. Without a salt, the
    hash of a short or guessable id can be reversed by trying ids: set one (``RAGREPLAY_SHADOW_SALT``).
    """
    return hmac.new(salt.encode("utf-8"), user_id.encode("utf-8"), hashlib.sha256).hexdigest()


SALT_SECRET = "shadow_user_salt"
"""The name under which the store keeps the salt it made."""


def resolve_salt(
    explicit: str, keeper: Callable[[str, Callable[[], str]], tuple[str, bool]] | None
) -> tuple[str, str]:
    """The salt for hashing user ids, and where it came from: ``explicit``, else ``$RAGREPLAY_SHADOW_SALT``,
    else the one the store keeps (made at random on first use and shared by every replica on that store),
    else, with no store to keep one, a random salt for this process only (nothing is stored then). Never
    empty: an empty key would make guessable ids reversible."""
    if explicit:
        return explicit, "argument"
    from_env = salt_from_env()
    if from_env:
        return from_env, f"${SALT_ENV}"
    if keeper is not None:
        salt, made = keeper(SALT_SECRET, lambda: secrets.token_hex(32))
        return salt, "the store (made now)" if made else "the store"
    return secrets.token_hex(32), "this process only (no store)"


def salt_from_env(default: str = "") -> str:
    """The hashing salt from ``RAGREPLAY_SHADOW_SALT``, else ``default``."""
    return os.environ.get(SALT_ENV, default)


_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(
    r"(?<![\w-])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?(?![\w-])"
)
_BSN = re.compile(r"(?<![\w.-])\d{4}\.?\d{2}\.?\d{3}(?![\w.-])|(?<![\w.-])\d{9}(?![\w.-])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # starts only at a run's start: linear time
_IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])")
_PHONE = re.compile(r"(?<![\w+])\+?[\d(][\d ().-]{6,}\d(?!\w)")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")


def luhn_ok(digits: str) -> bool:
    """The Luhn check of a card number (digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    """The ISO 7064 mod-97 check of an IBAN (separators and case ignored)."""
    compact = re.sub(r"[ -]", "", text).upper()
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def bsn_ok(text: str) -> bool:
    """The 11-check of a Dutch BSN (dots ignored): 9 digits weighted 9..2 and -1 sum to a multiple of 11."""
    digits = text.replace(".", "")
    if len(digits) != 9 or digits == "000000000":
        return False
    total = sum(int(d) * w for d, w in zip(digits[:8], range(9, 1, -1), strict=True)) - int(digits[8])
    return total % 11 == 0


def _checked(pattern: re.Pattern[str], ok: Callable[[str], bool], label: str) -> Callable[[str], str]:
    """A redaction step: ``pattern``'s matches that pass ``ok`` become ``label``."""

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        return label if ok(text) else text

    return lambda text: pattern.sub(replace, text)


def _card(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(ch.isdigit() for ch in text)
    if _DATE.search(text):  # a date, with or without a time after it: not a phone number
        return text
    return "[PHONE]" if 9 <= digits <= 15 else text


_STEPS = (
    _checked(_CARD, _card, "[CARD]"),
    _checked(_IBAN, iban_ok, "[IBAN]"),
    _checked(_BSN, bsn_ok, "[BSN]"),
)


def default_redactor(text: str) -> str:
    """``text`` with cards, IBANs, BSNs, e-mail addresses, IP addresses and phone numbers replaced (see the
    module docstring)."""
    for step in _STEPS:
        text = step(text)
    text = _EMAIL.sub("[EMAIL]", text)
    text = _IPV4.sub("[IP]", text)
    return _PHONE.sub(_phone, text)


REDACTION_FAILED = "[redaction failed]"
"""What is stored instead of a text whose redactor raised: never the raw text."""


def redact_or_mark(redact: Redactor, text: str) -> tuple[str, str | None]:
    """``redact(text)`` and ``None``, or :data:`REDACTION_FAILED` and why when the redactor raised (a plain
    function, so that it can run in the shadow's worker process)."""
    try:
        return redact(text), None
    except Exception as exc:  # never store the raw text because a redactor broke
        return REDACTION_FAILED, f"{type(exc).__name__}: {exc}"


def redact_texts(redact: Redactor, texts: list[str | None]) -> tuple[list[str | None], str | None]:
    """Each of ``texts`` (chunk texts; ``None`` stays ``None``) as :func:`redact_or_mark` stores it, and why
    the first that failed did (a plain function, so that it can run in the shadow's worker process)."""
    out: list[str | None] = []
    first_error: str | None = None
    for text in texts:
        if text is None:
            out.append(None)
            continue
        redacted, error = redact_or_mark(redact, text)
        out.append(redacted)
        first_error = first_error or error
    return out, first_error


def no_redaction(text: str) -> str:
    """``text`` unchanged (for logs that are allowed to keep queries verbatim)."""
    return text


def load_redactor(spec: str) -> Redactor:
    """The function named by ``"module:function"`` (e.g. ``"myapp.privacy:scrub"``); ``"default"`` and
    ``"none"`` name the built-ins. Raises :class:`ConfigError` saying what is wrong and how to fix it."""
    if spec in ("default", ""):
        return default_redactor
    if spec == "none":
        return no_redaction
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"shadow redactor {spec!r} is not of the form 'module:function'. "
            "Fix: write e.g. 'myapp.privacy:scrub', or 'default' / 'none'."
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"shadow redactor {spec!r}: cannot import module {module_name!r} ({exc}). "
            "Fix: check the module name and that it is importable (on PYTHONPATH)."
        ) from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise ConfigError(
            f"shadow redactor {spec!r}: module {module_name!r} has no function {attr!r}. "
            "Fix: name a function that takes the query text and returns the text to store."
        )
    redactor: Redactor = fn
    return redactor
