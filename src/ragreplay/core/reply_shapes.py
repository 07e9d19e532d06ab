"""Reading answers out of the loose shapes RAG apps reply with: dotted paths into JSON, chunks, token counts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragreplay.core.types import Answer, RetrievedChunk, TokenUsage


def get_path(data: Any, path: str) -> Any:
    """Follow a dotted path (``data.answer``, ``choices.0.message.content``); KeyError names the bad step."""
    current = data
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif (
            isinstance(current, list)
            and re.fullmatch(r"-?\d+", part)
            and -len(current) <= int(part) < len(current)
        ):
            current = current[int(part)]
        else:
            raise KeyError(part)
    return current


_TOKEN_KEYS = (
    ("in", "out"),
    ("input", "output"),
    ("prompt_tokens", "completion_tokens"),
    ("input_tokens", "output_tokens"),
)


def coerce_tokens(value: Any) -> TokenUsage:
    """Token usage from ``{"in", "out"}`` (or input/output, prompt_tokens/completion_tokens) or TokenUsage."""
    if value is None:
        return TokenUsage()
    if isinstance(value, TokenUsage):
        return value
    if isinstance(value, Mapping):
        for key_in, key_out in _TOKEN_KEYS:
            if key_in in value or key_out in value:
                return TokenUsage(input=int(value.get(key_in) or 0), output=int(value.get(key_out) or 0))
    raise ValueError(f"tokens {value!r} are not of the form {{'in': int, 'out': int}}")


def coerce_chunks(
    value: Any, id_field: str = "id", score_field: str = "score", text_field: str = "text"
) -> tuple[RetrievedChunk, ...]:
    """Retrieved contexts from a list of ids, of objects with id/score/text fields, or of RetrievedChunk."""
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not hasattr(value, "__iter__"):
        raise ValueError(f"contexts must be a list, got {type(value).__name__}")
    chunks = []
    for i, item in enumerate(value):
        if isinstance(item, RetrievedChunk):
            chunks.append(item)
        elif isinstance(item, str | int):
            chunks.append(RetrievedChunk(id=str(item)))
        elif isinstance(item, Mapping):
            if item.get(id_field) is None:
                raise ValueError(f"context {i} has no '{id_field}' field (keys: {sorted(map(str, item))})")
            score = item.get(score_field)
            text = item.get(text_field)
            chunks.append(
                RetrievedChunk(
                    id=str(item[id_field]),
                    score=float(score) if score is not None else None,
                    text=str(text) if text is not None else None,
                )
            )
        else:
            raise ValueError(f"context {i} is a {type(item).__name__}; expected an id or an object")
    return tuple(chunks)


def coerce_answer(value: Any) -> Answer:
    """Turn what a RAG function returned into an Answer (no latency yet); ValueError on a bad shape."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, str):
        return Answer(text=value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return Answer(text=value[0], contexts=coerce_chunks(value[1]))
    if isinstance(value, Mapping):
        text = value.get("answer", value.get("text"))
        if not isinstance(text, str):
            raise ValueError(f"returned a dict without a string 'answer' or 'text' (keys: {sorted(value)})")
        contexts = value.get("contexts", value.get("sources"))
        cost = value.get("cost_usd")
        return Answer(
            text=text,
            contexts=coerce_chunks(contexts),
            tokens=coerce_tokens(value.get("tokens")),
            cost_usd=float(cost) if cost is not None else 0.0,
        )
    raise ValueError(
        f"returned {type(value).__name__}; expected str, dict with 'answer', (answer, contexts) or Answer"
    )
