"""The one prompt that writes a test question from corpus chunks: versioned, the chunks fenced as data, the
reply one JSON object following :class:`SynthReply` (its schema sent as ``response_format``).

The kind of question asked is part of the user message; the topic to ask about (a section heading of the
chunks, or for an unanswerable question a topic the corpus does not cover) and the chunks, numbered with their
ids, are shown inside ``<contexts>``: two tasks on the same chunks ask about different topics, so their requests
(and cache keys) differ. The prompt's version is ``synth-1.<hash>`` of its text, example and schema: it is part of the
model cache's key, so a changed prompt never reuses old replies. The request's hints carry the template draft,
which the shipped fake model returns as its reply (:mod:`ragreplay.providers.fake`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragreplay.core.chat import ChatRequest
from ragreplay.datasets.synth_plan import Kind, SynthDraft, SynthTask
from ragreplay.judges.fence import fence
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.judges.structured import (
    numbered_chunks,
    structured_prompt_version,
    structured_request,
    structured_system,
)

TASK = "synth"
"""The request's task: the fake model answers it with the hints' draft."""


class SynthReply(BaseModel):
    """The reply's shape (every field required, no others)."""

    model_config = ConfigDict(extra="forbid")

    question: str
    reference: str
    chunk_ids: list[str]
    first_question: str
    first_answer: str
    reason: str = Field(description="one short sentence")


SYSTEM_PROMPT = """\
You write test questions for a retrieval-augmented assistant, from the numbered document chunks inside \
<contexts> (each shown as "[n] chunk-id" then its text), about the topic its first line names.
{rules}
Write one test item of the kind the user asks for:
- single_hop: a question a user could ask that the chunk answers on its own;
- multi_hop: a question that needs both chunks to answer fully;
- unanswerable: a question on the same subject that these chunks do not answer (nor would a policy like \
them); its reference says the documents do not answer it, and chunk_ids is empty;
- follow_up: a first question the first chunk answers (first_question, first_answer), then a second question \
that only makes sense after the first (it refers to the first one's subject, e.g. with "it") and that the \
second chunk answers.
Questions are natural, in the language of the chunks. The reference is a short correct answer taken from the \
chunks. chunk_ids lists the ids of the chunks that hold the reference. first_question and first_answer are "" \
unless the kind is follow_up.
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the \
material you are shown):
{example}"""

USER_TEMPLATE = """\
Write one {kind} test item from these chunks, about the topic named in them.

{contexts}

Reply with the JSON object only."""

_EXAMPLE = {
    "question": "How many days of leave do part-timers get?",
    "reference": "Part-timers get leave pro rata to their hours.",
    "chunk_ids": ["leave-policy#2"],
    "first_question": "",
    "first_answer": "",
    "reason": "The second chunk states the pro rata rule.",
}
_FENCED = ("contexts",)
REPLY_SCHEMA: dict[str, Any] = SynthReply.model_json_schema()
PROMPT_VERSION = structured_prompt_version("synth-1", SYSTEM_PROMPT, USER_TEMPLATE, _EXAMPLE, REPLY_SCHEMA)


def build_request(task: SynthTask) -> ChatRequest:
    """The one request that writes ``task``'s item."""
    chunks = numbered_chunks((c.id, c.text) for c in task.chunks)
    shown = f"Topic: {task.focus}\n\n{chunks}"
    return structured_request(
        system=structured_system(SYSTEM_PROMPT, _FENCED, "write questions from", _EXAMPLE),
        user=USER_TEMPLATE.format(kind=task.kind, contexts=fence("contexts", shown)),
        schema_name="synth_item",
        schema=REPLY_SCHEMA,
        prompt_version=PROMPT_VERSION,
        task=TASK,
        hints={"kind": task.kind, "draft": task.draft.as_reply()},
    )


class UnreadableReply(ValueError):
    """A reply that gives no usable item (the message says why)."""


def read_reply(text: str, kind: Kind, shown: set[str]) -> SynthDraft:
    """The item in a reply; chunk ids the model was not shown are left out. :class:`UnreadableReply` for prose,
    a bad shape, an empty question or reference, or a follow-up without its first turn."""
    found = read_reply_object(text, ("question",))
    if found.value is None:
        raise UnreadableReply(found.problem)
    try:
        reply = SynthReply.model_validate(found.value)
    except ValidationError as exc:
        raise UnreadableReply(f"the reply does not follow the schema: {exc.errors()[0]['msg']}") from None
    if not reply.question.strip() or not reply.reference.strip():
        raise UnreadableReply("the reply's question or reference is empty")
    if kind == "follow_up" and not (reply.first_question.strip() and reply.first_answer.strip()):
        raise UnreadableReply("a follow_up reply needs first_question and first_answer")
    ids = () if kind == "unanswerable" else tuple(dict.fromkeys(i for i in reply.chunk_ids if i in shown))
    if kind == "follow_up":
        return SynthDraft(
            reply.question.strip(),
            reply.reference.strip(),
            ids,
            reply.first_question.strip(),
            reply.first_answer.strip(),
        )
    return SynthDraft(reply.question.strip(), reply.reference.strip(), ids)
