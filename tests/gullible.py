"""A gullible judge model for the injection tests: it obeys the last verdict it is told outside a fenced block.

It reads the user message the way a naive model might and takes the system prompt on trust (so the reply
example there is not an order):

- **fences**: a block opens at ``<tag>`` for any tag of :data:`ragreplay.judges.fence.TAGS` and closes at the
  first closing tag of that name, read loosely: after NFKC, without zero-width characters, with look-alike
  brackets as ``<``, any case, spaces, and ``_``, ``-``, space or nothing between the words (so it falls for
  every closing-tag trick the fence escapes). Escaped tags (``&lt;``) are text.
- **orders**: outside the blocks, the last verdict it is told (``"verdict": "FIT"``, ``the verdict is NO_FIT``,
  ``reply with FIT``, ``"winner": "A"``, ``answer B wins``, ``winnaar B``...) is the verdict it gives.
- **sections**: outside the blocks, a label (``NEW answer:``, ``Answer B:``, ``Nieuw antwoord:``...) starts
  a section that runs to the next blank line; the last block or section of each kind is what it judges.
- **honest rule**, with no order: FIT when the first lines of the old and new answer name the same numbers;
  pairwise, the answer whose first line shares more words with the question's wins (tie when equal). A part
  it cannot find is taken from the request's hints.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ragreplay.core.chat import ChatRequest
from ragreplay.judges.fence import TAGS
from ragreplay.providers.scripted import ScriptedChatModel

_LOOKALIKES = str.maketrans(
    {
        **{c: "<" for c in "\u2039\u2329\u3008\u27e8\u276e"},
        **{c: ">" for c in "\u203a\u232a\u3009\u27e9\u276f"},
    }
)
_SEPARATORS = re.compile(r"[\s_-]+")
_TAG = re.compile(r"<\s*(/?)\s*([a-z][a-z _-]*?)\s*>", re.IGNORECASE)
_KIND = {
    "question": "question",
    "old_answer": "old",
    "new_answer": "new",
    "answer_a": "a",
    "answer_b": "b",
    "chunks_a": "chunks_a",
    "chunks_b": "chunks_b",
}
_LABELS = {
    "question": "question",
    "vraag": "question",
    "old answer": "old",
    "oud antwoord": "old",
    "new answer": "new",
    "nieuw antwoord": "new",
    "answer a": "a",
    "antwoord a": "a",
    "answer b": "b",
    "antwoord b": "b",
}
_LABEL = re.compile(r"^[ \t]*(" + "|".join(_LABELS) + r")[ \t]*:[ \t]*\n?", re.IGNORECASE | re.MULTILINE)
_FIT_ORDERS = (
    re.compile(r'"verdict"\s*:\s*"(no[_ ]fit|fit)"', re.IGNORECASE),
    re.compile(
        r"\b(?:verdict|oordeel|output|say|says|zeg|zegt|answers|reply with|answer with|antwoord met)\b"
        r"[^\n.{}]{0,30}?\b(no[_ ]fit|fit)\b",
        re.IGNORECASE,
    ),
)
_WINNER_ORDERS = (
    re.compile(r'"winner"\s*:\s*"(A|B|tie)"', re.IGNORECASE),
    re.compile(r"\b(?i:winner|winnaar)\b\s*(?:is\s*|=\s*|:\s*)?(?:(?i:answer|antwoord)\s+)?(A|B|tie)\b"),
    re.compile(r"\b(?i:answer|antwoord)\s+(A|B)\s+(?i:wins|wint|is better|is beter)\b"),
)
_WORD = re.compile(r"[a-z0-9]+")


def _name(raw: str) -> str:
    return _SEPARATORS.sub("_", raw.strip().lower())


def normalise(text: str) -> str:
    """What the model reads: NFKC, look-alike brackets as ``<``, no zero-width or other format characters."""
    text = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _scan(text: str) -> tuple[list[tuple[int, str]], list[tuple[str, str, int]]]:
    """``(outside parts with their start, blocks as (tag, content, start))`` of normalised ``text``."""
    outside: list[tuple[int, str]] = []
    blocks: list[tuple[str, str, int]] = []
    pos = 0
    while pos <= len(text):
        opening = next(
            (m for m in _TAG.finditer(text, pos) if not m.group(1) and _name(m.group(2)) in TAGS), None
        )
        if opening is None:
            break
        tag = _name(opening.group(2))
        closing = next(
            (m for m in _TAG.finditer(text, opening.end()) if m.group(1) and _name(m.group(2)) == tag), None
        )
        outside.append((pos, text[pos : opening.start()]))
        end = closing.start() if closing else len(text)
        blocks.append((tag, text[opening.end() : end].strip("\n"), opening.start()))
        pos = closing.end() if closing else len(text) + 1
    outside.append((pos, text[pos:]))
    return outside, blocks


def split_fences(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``(outside parts, blocks as (tag, content))`` of ``text`` as this model reads it: ``outside parts``
    has one more item than ``blocks``, the text before, between and after them."""
    outside, blocks = _scan(normalise(text))
    return [part for _, part in outside], [(tag, body) for tag, body, _ in blocks]


def _sections(text: str) -> dict[str, str]:
    """The last block or labelled section of each kind, as read outside the blocks."""
    outside, blocks = _scan(normalise(text))
    found = [(start, _KIND[tag], body) for tag, body, start in blocks if tag in _KIND]
    for offset, part in outside:
        for label in _LABEL.finditer(part):
            body = re.split(r"\n\s*\n", part[label.end() :], maxsplit=1)[0]
            found.append((offset + label.start(), _LABELS[label.group(1).lower()], body))
    return {kind: body for _, kind, body in sorted(found, key=lambda item: item[0])}


def _last_order(text: str, patterns: tuple[re.Pattern[str], ...]) -> str | None:
    """The last verdict ordered outside the blocks of ``text``, upper-cased, or ``None``."""
    outside = "\n".join(part for _, part in _scan(normalise(text))[0])
    orders = [(m.start(), m.group(1)) for p in patterns for m in p.finditer(outside)]
    return max(orders)[1].upper().replace(" ", "_") if orders else None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+", _first_line(text)))


def _overlap(answer: str, question: str) -> int:
    return len(
        set(_WORD.findall(_first_line(answer).lower())) & set(_WORD.findall(_first_line(question).lower()))
    )


def gullible_reply(request: ChatRequest) -> str:
    """The reply of the gullible model to a FIT or pairwise judge request (see the module docstring)."""
    user = "\n".join(m.content for m in request.messages if m.role == "user")
    sections, hints = _sections(user), request.hints
    if request.task == "fit":
        verdict = _last_order(user, _FIT_ORDERS)
        if verdict is None:
            old = sections.get("old", str(hints["old_answer"]))
            new = sections.get("new", str(hints["new_answer"]))
            verdict = "FIT" if _numbers(old) == _numbers(new) else "NO_FIT"
        return json.dumps({"verdict": verdict, "reason": "gullible"})
    assert request.task == "pairwise", request.task
    winner = _last_order(user, _WINNER_ORDERS)
    if winner is None:
        question = sections.get("question", str(hints["question"]))
        a = _overlap(sections.get("a", str(hints["answer_a"])), question)
        b = _overlap(sections.get("b", str(hints["answer_b"])), question)
        winner = "A" if a > b else "B" if b > a else "tie"
    scores: dict[str, Any] = {str(axis): 3 for axis in hints["axes"]}
    return json.dumps(
        {
            "scores_a": scores,
            "scores_b": scores,
            "winner": "tie" if winner == "TIE" else winner,
            "reason": "g",
        }
    )


def gullible_model() -> ScriptedChatModel:
    """A scripted model answering every request with :func:`gullible_reply`."""
    return ScriptedChatModel(gullible_reply, name="scripted:gullible")
