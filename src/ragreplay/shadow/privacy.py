"""What the shadow does to personal data before a row leaves the process: hash user ids, redact queries.

Both are on by default. The default redactor replaces, in this order:

- IBANs (two upper-case letters, two check digits, then 11-30 letters/digits, with or without a space every
  four characters, e.g. ``NL91 ABNA 0417 1643 00``) with ``[IBAN]``;
- e-mail addresses (``name@host.tld``) with ``[EMAIL]``;
- phone numbers: runs of digits, spaces, dots, dashes and brackets, optionally starting with ``+``, holding
  9 to 15 digits (so ``+31 6 1234 5678`` and ``(020) 123-4567`` go, while dates such as ``2024-01-01``, years
  and amounts stay) with ``[PHONE]``.

It is a safety net, not an anonymiser: names, addresses and free-text identifiers pass through. A team with
stricter needs points the shadow at its own function with ``"module:function"`` (see :func:`load_redactor`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import os
import re
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


def salt_from_env(default: str = "") -> str:
    """The hashing salt from ``RAGREPLAY_SHADOW_SALT``, else ``default``."""
    return os.environ.get(SALT_ENV, default)


_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # starts only at a run's start: linear time
_PHONE = re.compile(r"(?<![\w+])\+?[\d(][\d ().-]{6,}\d(?!\w)")


def _phone(match: re.Match[str]) -> str:
    digits = sum(ch.isdigit() for ch in match.group(0))
    return "[PHONE]" if 9 <= digits <= 15 else match.group(0)


def default_redactor(text: str) -> str:
    """``text`` with IBANs, e-mail addresses and phone numbers replaced (see the module docstring)."""
    text = _IBAN.sub("[IBAN]", text)
    text = _EMAIL.sub("[EMAIL]", text)
    return _PHONE.sub(_phone, text)


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
