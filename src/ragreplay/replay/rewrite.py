"""Follow-up rewriting: turn "how old is she?" into a standalone question using the conversation.

One model call decides and rewrites; no call at all when there is no history. The result is pinned per case by
the engine, so a case always replays the same question.
"""

from __future__ import annotations

import re

from ragreplay.core.chat import ChatMessage, ChatRequest
from ragreplay.core.ids import content_hash
from ragreplay.core.lexicon import FOLLOW_UP_OPENERS, PRONOUNS
from ragreplay.core.types import Case, Rewrite, Role
from ragreplay.judges.json_reply import parse_json_object
from ragreplay.ports import ChatModel

REWRITE_SYSTEM_PROMPT = """\
You prepare questions for a search system that has no memory of the conversation.
Given the conversation so far and the user's latest question, decide whether the latest question can be
understood on its own. If it can, return it exactly as written. If it relies on the conversation (pronouns
such as "she" or "it", "that policy", "and for managers?", an ellipsis), rewrite it into one standalone
question in the same language as the user's question, adding only what the conversation says is meant.
Keep typos' meaning, do not answer the question, do not add facts.
Reply with a JSON object and nothing else: {"standalone": true or false, "query": "<the question to search>"}"""

REWRITE_USER_TEMPLATE = """\
Conversation so far:
{history}

Latest question: {query}"""

REWRITE_PROMPT_VERSION = "rewrite-1." + content_hash([REWRITE_SYSTEM_PROMPT, REWRITE_USER_TEMPLATE], length=8)
_SPEAKER = {Role.HUMAN: "User", Role.AI: "Assistant"}


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
        history = "\n".join(f"{_SPEAKER.get(m.role, m.role)}: {m.content}" for m in case.history)
        return ChatRequest(
            messages=(
                ChatMessage(role="system", content=REWRITE_SYSTEM_PROMPT),
                ChatMessage(
                    role="user", content=REWRITE_USER_TEMPLATE.format(history=history, query=case.query)
                ),
            ),
            json_mode=True,
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
        obj = parse_json_object(response.text)
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
        )


class LocalRewriter:
    """A rule-based rewriter that needs no model: a follow-up gets the earlier questions prepended.

    A question counts as a follow-up when it opens like one ("and for part-timers?", "wat als ..."), leans on a
    pronoun ("does it apply to me?"), or is very short. It gets the conversation's first question and the
    previous one prepended. Prepending earlier questions is the classic
    history-concatenation baseline of conversational search: it gives the retriever the missing subject without
    inventing words, at the cost of some noise. A model rewriter does better (see docs/benchmarks.md).
    """

    name = "local:concat"
    prompt_version = "local-concat-1"

    async def rewrite(self, case: Case) -> Rewrite:
        """The standalone question for ``case``: unchanged, or the previous question + this one."""
        humans = [m.content for m in case.history if m.role is Role.HUMAN and m.content.strip()]
        if not humans or not is_follow_up(case.query):
            note = "no history" if not humans else "already standalone"
            return Rewrite(
                original=case.query,
                query=case.query,
                rewritten=False,
                model=self.name,
                prompt_version=self.prompt_version,
                note=note,
            )
        # The subject is usually set by the conversation's opening question or by the one just before.
        context = list(dict.fromkeys([humans[0].strip(), humans[-1].strip()]))
        query = " ".join([*context, case.query.strip()])
        return Rewrite(
            original=case.query,
            query=query,
            rewritten=True,
            model=self.name,
            prompt_version=self.prompt_version,
            note="earlier questions prepended",
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
