"""A fenced structured judge request: one builder for every prompt that shows fenced data and asks for one JSON
object of a given schema (the LLM-judged metrics, the rubric judge, the coverage check, synth's writer).

Each such prompt has a system template with ``{rules}`` (the shared data rules of :mod:`.fence`) and
``{example}`` (an example reply, as JSON), a user message whose data is fenced, and a version that hashes the
prompt's text, its example and its schema, so that a changed prompt never reuses old replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragreplay.core.chat import ChatMessage, ChatRequest, ResponseFormat
from ragreplay.core.ids import content_hash
from ragreplay.judges.fence import data_rules


def structured_prompt_version(
    prefix: str, system: str, user: str, example: Any, schema: Mapping[str, Any], **extra: Any
) -> str:
    """``<prefix>.<hash>`` of the system and user templates, the example, the reply's schema and any ``extra``
    that shapes the prompt (a rubric)."""
    parts = {"system": system, "user": user, "example": example, "schema": schema, **extra}
    return f"{prefix}." + content_hash(parts, 8)


def structured_system(template: str, fenced: Sequence[str], purpose: str, example: Any, **fields: str) -> str:
    """The system message: ``template`` with the data rules for the ``fenced`` tags (the data is there to
    ``purpose``), the example reply as JSON and any other ``fields`` of the template."""
    return template.format(rules=data_rules(fenced, purpose), example=json.dumps(example), **fields)


def numbered_chunks(chunks: Iterable[tuple[str, str]]) -> str:
    """``(id, text)`` chunks as a judge reads them: ``[n] id`` then the text, numbered from 1, a blank line
    between two (empty when there are none)."""
    return "\n\n".join(f"[{n}] {cid}\n{text}" for n, (cid, text) in enumerate(chunks, start=1))


def structured_request(
    *,
    system: str,
    user: str,
    schema_name: str,
    schema: dict[str, Any],
    prompt_version: str,
    task: str,
    hints: dict[str, Any],
) -> ChatRequest:
    """The request: the system and user messages, temperature 0, the reply's JSON ``schema`` as
    ``response_format``, the prompt's version (part of the cache key), the ``task`` and the fake model's
    ``hints`` (never sent to a real endpoint)."""
    return ChatRequest(
        messages=(ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)),
        temperature=0.0,
        response_format=ResponseFormat(name=schema_name, json_schema=schema),
        prompt_version=prompt_version,
        task=task,
        hints=hints,
    )
