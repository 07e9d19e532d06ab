"""Follow-up rewriting: turn "how old is she?" into a standalone question using the conversation.

One model call decides and rewrites; no call at all when there is no history. The result is pinned per case by
the engine, so a case always replays the same question. The question and every turn of the history are user
data, fenced like a judge's (:mod:`ragreplay.judges.fence`).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from ragreplay.core.chat import ChatMessage, ChatRequest, ResponseFormat
from ragreplay.core.ids import content_hash
from ragreplay.core.lexicon import FOLLOW_UP_OPENERS, PRONOUNS
from ragreplay.core.types import Case, Rewrite, Role
from ragreplay.judges.fence import data_rules, fence
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.ports import ChatModel
from ragreplay.replay.referent import resolve_follow_up


class RewriteReply(BaseModel):
    """The reply the rewriter asks for: whether the question stands alone, and the question to search."""

    model_config = ConfigDict(extra="forbid")

    standalone: bool
    query: str


REWRITE_RESPONSE_FORMAT = ResponseFormat(
    name="standalone_query", json_schema=RewriteReply.model_json_schema()
)
"""The JSON schema sent as ``response_format`` with every rewrite request."""

REWRITE_SYSTEM_PROMPT = (
    """\
You prepare questions for a search system that has no memory of the conversation.
Given the conversation so far (each turn in <user_turn> or <assistant_turn>, oldest first) and the user's latest
question (in <question>), decide whether the latest question can be understood on its own. If it can, return
it exactly as written. If it relies on the conversation (pronouns such as "she" or "it", "that policy", "and
for managers?", an ellipsis), rewrite it into one standalone question in the same language as the user's
question, adding only what the conversation says is meant.
Keep typos' meaning, do not answer the question, do not add facts.
"""
    + data_rules(("user_turn", "assistant_turn", "question"), purpose="rewrite from")
    + """
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the
conversation you are shown):
{"standalone": false, "query": "How many days of leave do part-time staff get?"}
"standalone" is true or false; "query" is the question to search."""
)

REWRITE_USER_TEMPLATE = """\
The conversation so far:
{history}

The latest question:
{query}

Reply with the JSON object only."""

REWRITE_PROMPT_VERSION = "rewrite-2." + content_hash(
    [
        REWRITE_SYSTEM_PROMPT,
        REWRITE_USER_TEMPLATE,
        json.dumps(REWRITE_RESPONSE_FORMAT.json_schema, sort_keys=True),
    ],
    length=8,
)

# frozen: one for every request
_REWRITE_SYSTEM_MESSAGE = ChatMessage(role="system", content=REWRITE_SYSTEM_PROMPT)


class Rewriter:
    """Rewrites follow-up questions with a chat model."""

    prompt_version = REWRITE_PROMPT_VERSION

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    @property
    def name(self) -> str:
        """The rewriter model's spec."""
        return self._model.name

    def request(self, case: Case) -> ChatRequest:
        """The chat request that asks for a standalone version of ``case.query``."""
        history = "\n".join(
            fence("assistant_turn" if m.role is Role.AI else "user_turn", m.content) for m in case.history
        )
        user = REWRITE_USER_TEMPLATE.format(history=history, query=fence("question", case.query))
        return ChatRequest(
            messages=(
                _REWRITE_SYSTEM_MESSAGE,
                ChatMessage(role="user", content=user),
            ),
            json_mode=True,
            response_format=REWRITE_RESPONSE_FORMAT,
            prompt_version=REWRITE_PROMPT_VERSION,
            task="rewrite",
            hints={
                "query": case.query,
                "history": [{"role": str(m.role), "content": m.content} for m in case.history],
            },
        )

    async def rewrite(self, case: Case) -> Rewrite:
        """The standalone question for ``case``. Provider failures propagate; an unreadable reply keeps the query."""
        if not case.history:
            return Rewrite(original=case.query, query=case.query, rewritten=False, note="no history")
        response = await self._model.complete(self.request(case))
        obj = read_reply_object(response.text, ("query",)).value
        query = obj.get("query") if obj else None
        if not isinstance(query, str) or not query.strip():
            return Rewrite(
                original=case.query,
                query=case.query,
                rewritten=False,
                model=self.name,
                prompt_version=REWRITE_PROMPT_VERSION,
                note="unreadable rewriter reply; original question kept",
                cost_usd=response.cost_usd,
                unpriced_calls=response.unpriced_calls,
                unreadable=True,
            )
        query = query.strip()
        return Rewrite(
            original=case.query,
            query=query,
            rewritten=query != case.query.strip(),
            model=self.name,
            prompt_version=REWRITE_PROMPT_VERSION,
            cost_usd=response.cost_usd,
            unpriced_calls=response.unpriced_calls,
        )


class LocalRewriter:
    """A rule-based rewriter that needs no model and never invents words.

    A follow-up that leans on a personal pronoun ("is it treatable?") gets the pronoun replaced by the
    conversation's subject (:func:`~ragreplay.replay.referent.resolve_follow_up`); one that opens like a
    follow-up without a pronoun ("and for part-timers?", "wat als ...") gets the previous question prepended,
    which gives the retriever the missing subject. Anything else is left unchanged, so a self-contained question
    is almost never touched. On TREC CAsT (dev) it beats leaving questions unchanged on token F1 while keeping
    96% of the self-contained ones as they are; a model rewriter does better (see docs/benchmarks.md).
    """

    name = "local:referent"
    prompt_version = "local-referent-1"

    async def rewrite(self, case: Case) -> Rewrite:
        """The standalone question for ``case``: unchanged, the pronoun resolved, or the previous question +
        this one."""
        humans = [m.content.strip() for m in case.history if m.role is Role.HUMAN and m.content.strip()]
        query, note = case.query.strip(), "no history" if not humans else "already standalone"
        if humans:
            resolved = resolve_follow_up(query, humans)
            if resolved is not None:
                query, note = resolved, "pronoun replaced by the conversation's subject"
            elif " ".join(query.lower().split()).startswith(FOLLOW_UP_OPENERS):
                query, note = f"{humans[-1]} {query}", "previous question prepended"
        rewritten = query != case.query.strip()
        return Rewrite(
            original=case.query,
            query=query if rewritten else case.query,
            rewritten=rewritten,
            model=self.name,
            prompt_version=self.prompt_version,
            note=note,
        )


class ConcatRewriter:
    """History concatenation, the classic baseline of conversational search: a detected follow-up
    (:func:`is_follow_up`: a follow-up opener, a pronoun or deictic word, or three words or fewer) gets the
    conversation's first question and the previous one prepended. It gives the retriever the missing subject
    of elliptical follow-ups ("since when?", "wordt dat doorbetaald?") that :class:`LocalRewriter` leaves alone,
    at the cost of noise and of changing more self-contained questions (see docs/benchmarks.md)."""

    name = "local:concat"
    prompt_version = "local-concat-1"

    async def rewrite(self, case: Case) -> Rewrite:
        """The standalone question for ``case``: unchanged, or the first and previous questions + this one."""
        humans = [m.content.strip() for m in case.history if m.role is Role.HUMAN and m.content.strip()]
        if not humans or not is_follow_up(case.query):
            note = "no history" if not humans else "already standalone"
            query, rewritten = case.query, False
        else:
            context = list(dict.fromkeys([humans[0], humans[-1]]))
            query, rewritten, note = (
                " ".join([*context, case.query.strip()]),
                True,
                "earlier questions prepended",
            )
        return Rewrite(
            original=case.query,
            query=query,
            rewritten=rewritten,
            model=self.name,
            prompt_version=self.prompt_version,
            note=note,
        )


def is_follow_up(query: str) -> bool:
    """Whether ``query`` probably needs the conversation to be understood (English and Dutch rules)."""
    text = " ".join(query.lower().split())
    words = re.findall(r"[^\W\d_]+", text)
    if text.startswith(FOLLOW_UP_OPENERS):
        return True
    if any(w in PRONOUNS for w in words):
        return True
    return len(words) <= 3
