"""JSON text from a user's file, parsed so that every way it can fail is a problem to report, not a traceback.

Beyond syntax errors (:class:`json.JSONDecodeError`, which callers describe with its position), Python's parser
fails on nesting deeper than the interpreter's recursion limit (``RecursionError``) and on integers longer than
``sys.get_int_max_str_digits()`` (``ValueError``); and it accepts ``\\ud800``-style escapes of a lone UTF-16
surrogate, a string that cannot be written as UTF-8 later (hashing, the store). Each becomes a
:class:`JsonTextError` with the field, the message and the fix.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonTextError(ValueError):
    """JSON that is well formed but cannot be used: ``field`` (a dotted path, or ``None``), ``message``, ``fix``."""

    def __init__(self, message: str, fix: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.field = field


def parse_json(text: str) -> Any:
    """``json.loads(text)``; raises :class:`json.JSONDecodeError` for bad syntax, :class:`JsonTextError` for
    nesting too deep, a number too long, or a lone surrogate escape."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JsonTextError(
            "JSON nested too deeply to read",
            "flatten it: a log line needs a few levels of nesting, not hundreds",
        ) from None
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        raise JsonTextError(
            f"a number longer than {sys.get_int_max_str_digits()} digits",
            "write such a number as a string, or leave it out",
        ) from None
    if "\\ud" in text or "\\uD" in text:
        where = lone_surrogate_at(value)
        if where is not None:
            raise JsonTextError(
                "a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which no text encoding "
                "can hold",
                "export the text as UTF-8: write the character itself, or both halves of its surrogate pair",
                field=where or None,
            )
    return value


def lone_surrogate_at(value: Any) -> str | None:
    """The dotted path of the first string (or key) in ``value`` holding a lone surrogate, ``""`` for ``value``
    itself, or ``None`` if there is none. Walks with a stack: the depth of a parsed value is no limit here."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                sub_path = f"{path}.{key}" if path else str(key)
                if _SURROGATE.search(key):
                    return sub_path
                stack.append((sub_path, sub))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", sub) for i, sub in reversed(list(enumerate(item))))
    return None
