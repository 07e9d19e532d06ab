"""The LLM pairwise judge: which of two answers (shown only as A and B) is better, scored on 1-5 axes.

The judge sees the question and, for each answer, the chunks that answer was given (id, document date when
known, text). It scores each answer 1-5 on every axis and names a winner (A, B or tie) with a short reason,
as one JSON object (asked for with its JSON schema, :func:`reply_schema`). It is never told where an answer came
from; position bias is handled by the caller (:mod:`ragreplay.judges.position` judges each pair in both orders).
The question, the answers and the chunks are fenced as data (:mod:`ragreplay.judges.fence`), so what an answer
or a chunk says cannot pass for an instruction or for the verdict.

A reply with no readable JSON, an unknown winner, or a missing or out-of-range axis score gives
``winner=None`` ("could not score") with the raw reply kept: it is never guessed into a decision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from ragreplay.core.chat import ChatMessage, ChatRequest, ResponseFormat
from ragreplay.core.ids import content_hash
from ragreplay.core.pairwise import AxisScores, PairwiseJudgment, PairwiseSide, Winner
from ragreplay.errors import ConfigError
from ragreplay.judges.fence import data_rules, fence
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.ports import ChatModel

_AXIS_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_Score: TypeAlias = Literal[1, 2, 3, 4, 5]
_WINNERS: dict[str, Winner] = {"a": "A", "b": "B", "tie": "tie", "draw": "tie", "equal": "tie"}


class Axis(BaseModel):
    """One thing the judge scores 1-5 on each side: a short snake_case name and the rubric the judge reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    rubric: str

    @field_validator("name")
    @classmethod
    def _snake_case(cls, value: str) -> str:
        if not _AXIS_NAME.match(value) or value.startswith("model_"):
            raise ValueError(
                f"axis name {value!r} must be lowercase snake_case (letters, digits, _; at most 40 characters, "
                "not starting with 'model_'), e.g. 'groundedness'"
            )
        return value


DEFAULT_AXES: tuple[Axis, ...] = (
    Axis(
        name="groundedness",
        rubric="every claim in the answer can be traced to one of the chunks retrieved for that answer",
    ),
    Axis(
        name="completeness", rubric="the answer covers every part of the question that the chunks can answer"
    ),
    Axis(name="directness", rubric="the answer addresses the question at once, without filler or evasion"),
    Axis(
        name="recency",
        rubric="where documents exist in several versions, the answer relies on and cites the most recent "
        "version that applies",
    ),
)

PAIRWISE_SYSTEM_TEMPLATE = """\
You are an impartial judge. Two assistants, labelled A and B, answered the same question; each was given the
document chunks listed with its answer: <question> holds the question, <answer_a> and <chunks_a> answer A and
its chunks, <answer_b> and <chunks_b> answer B and its chunks. Decide which answer serves the person who asked
better.
Judge only the content. The order in which the answers are shown and their length say nothing about quality.
{rules}
Score each answer from 1 (poor) to 5 (excellent) on each axis:
{axes}
Then name the winner: "A", "B", or "tie" when neither is clearly better.
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the
answers you are shown):
{example}
Scores are whole numbers from 1 to 5, one per axis for each answer; "winner" is "A", "B" or "tie"; "reason" is
one short sentence."""

PAIRWISE_USER_TEMPLATE = """\
Which answer serves the person who asked better, A or B?

{question}

{answer_a}

{chunks_a}

{answer_b}

{chunks_b}

Reply with the JSON object only."""

REFERENCE_NOTE = (
    "A correct answer to the question (reviewed or gold); prefer the answer that agrees with it, and do not "
    "reward wording copied from it over substance:"
)
PROMPT_FAMILY = "pairwise-2."
_WINNER_KEYS = ("winner",)
_FENCED = ("question", "answer_a", "chunks_a", "answer_b", "chunks_b")


def _system_prompt(axes: Sequence[Axis]) -> str:
    listed = "\n".join(f"- {a.name}: {a.rubric}" for a in axes)
    example = {
        "scores_a": {a.name: 3 for a in axes},
        "scores_b": {a.name: 4 for a in axes},
        "winner": "B",
        "reason": "B answers from its chunks; A adds a claim that no chunk supports.",
    }
    return PAIRWISE_SYSTEM_TEMPLATE.format(
        rules=data_rules(_FENCED), axes=listed, example=json.dumps(example)
    )


def reply_schema(axes: Sequence[Axis]) -> dict[str, Any]:
    """The JSON schema of the reply for ``axes``: both sides' 1-5 scores, the winner and a reason."""
    # Fields are named by position and aliased to the axis: an axis may be called like a BaseModel attribute.
    fields: dict[str, Any] = {f"axis_{n}": (_Score, Field(alias=axis.name)) for n, axis in enumerate(axes)}
    scores = create_model("AxisScoresReply", __config__=ConfigDict(extra="forbid"), **fields)
    reply = create_model(
        "PairwiseReply",
        __config__=ConfigDict(extra="forbid"),
        scores_a=(scores, ...),
        scores_b=(scores, ...),
        winner=(Winner, ...),
        reason=(str, ...),
    )
    return reply.model_json_schema(by_alias=True)


def format_chunks(side: PairwiseSide) -> str:
    """The side's chunks as the judge reads them: ``[n] id (date)`` then the text; a note when there are none."""
    if not side.contexts:
        return "(no chunks retrieved)"
    blocks = []
    for n, chunk in enumerate(side.contexts, start=1):
        when = side.context_dates.get(chunk.id)
        head = f"[{n}] {chunk.id}" + (f" (dated {when.isoformat()})" if when else "")
        blocks.append(f"{head}\n{chunk.text if chunk.text is not None else '(text not available)'}")
    return "\n\n".join(blocks)


def _score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and float(value).is_integer():
        score = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        score = int(value.strip())
    else:
        return None
    return score if 1 <= score <= 5 else None


def _side_scores(raw: Any, axes: Sequence[Axis]) -> AxisScores | str:
    """The side's scores, or a message naming what is missing or invalid."""
    if not isinstance(raw, Mapping):
        return "scores missing"
    scores: dict[str, int] = {}
    for axis in axes:
        score = _score(raw.get(axis.name))
        if score is None:
            return f"axis {axis.name!r} missing or not 1-5: {raw.get(axis.name)!r}"
        scores[axis.name] = score
    return AxisScores(**scores)


def _winner(raw: Any) -> Winner | None:
    text = re.sub(r"^(answer|assistant)\s+", "", str(raw).strip().lower()).strip(" .\"'")
    return _WINNERS.get(text)


def parse_pairwise_reply(
    text: str, axes: Sequence[Axis] = DEFAULT_AXES
) -> tuple[Winner | None, AxisScores | None, AxisScores | None, str]:
    """``(winner, scores_a, scores_b, reason)`` from a reply; ``winner`` is ``None`` when anything is unreadable.

    Accepts ``scores_a``/``scores_b`` or ``scores: {"A": ..., "B": ...}``; numeric strings count as scores.
    """
    reply = read_reply_object(text, _WINNER_KEYS)
    obj = reply.value
    if obj is None:
        return None, None, None, f"could not score: {reply.problem}"
    found = obj.get("scores")
    nested: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    raw_a = obj.get("scores_a", nested.get("A", nested.get("a")))
    raw_b = obj.get("scores_b", nested.get("B", nested.get("b")))
    winner = _winner(obj.get("winner", ""))
    if winner is None:
        return None, None, None, f"could not score: winner missing or invalid: {obj.get('winner')!r}"
    scores_a, scores_b = _side_scores(raw_a, axes), _side_scores(raw_b, axes)
    if isinstance(scores_a, str) or isinstance(scores_b, str):
        problem = scores_a if isinstance(scores_a, str) else scores_b
        side = "A" if isinstance(scores_a, str) else "B"
        return None, None, None, f"could not score: answer {side} {problem}"
    return winner, scores_a, scores_b, str(obj.get("reason", "")).strip()


class LLMPairwiseJudge:
    """A :class:`~ragreplay.ports.PairwiseJudge` backed by any chat model (a real endpoint or the fake).

    ``axes``: what to score (the four :data:`DEFAULT_AXES` unless given); they are part of the prompt version.
    """

    def __init__(self, model: ChatModel, axes: Sequence[Axis] = DEFAULT_AXES) -> None:
        self.axes = tuple(axes)
        if not self.axes:
            raise ConfigError("a pairwise judge needs at least one axis. Fix: list axes, or leave them out")
        names = [a.name for a in self.axes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"pairwise judge axes are listed twice: {duplicates}. Fix: name each axis once")
        self._model = model
        self.system_prompt = _system_prompt(self.axes)
        self.response_format = ResponseFormat(name="pairwise_verdict", json_schema=reply_schema(self.axes))
        digest = content_hash(
            [
                self.system_prompt,
                PAIRWISE_USER_TEMPLATE,
                [a.model_dump() for a in self.axes],
                self._schema_text,
            ],
            length=8,
        )
        self._version = PROMPT_FAMILY + digest

    @property
    def name(self) -> str:
        """The judge model's spec."""
        return self._model.name

    @property
    def prompt_version(self) -> str:
        """``pairwise-2.<hash of the prompt text, axes and reply schema>``."""
        return self._version

    @property
    def _schema_text(self) -> str:
        return json.dumps(self.response_format.json_schema, sort_keys=True)

    @property
    def prompt_text(self) -> str:
        """The prompt templates as sent (the system prompt with its axes, the user template, the reply schema)."""
        return self.system_prompt + "\n" + PAIRWISE_USER_TEMPLATE + "\n" + self._schema_text

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The names of the axes scored."""
        return tuple(a.name for a in self.axes)

    def request(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> ChatRequest:
        """The chat request that asks the model to compare ``a`` (shown as A) with ``b`` (shown as B); with a
        ``reference`` answer, it is shown after the question as a correct answer to compare against."""
        if reference is not None and reference.strip():
            question_block = (
                fence("question", question) + "\n\n" + REFERENCE_NOTE + "\n" + fence("reference", reference)
            )
        else:
            question_block = fence("question", question)
        user = PAIRWISE_USER_TEMPLATE.format(
            question=question_block,
            answer_a=fence("answer_a", a.answer),
            chunks_a=fence("chunks_a", format_chunks(a)),
            answer_b=fence("answer_b", b.answer),
            chunks_b=fence("chunks_b", format_chunks(b)),
        )
        return ChatRequest(
            messages=(
                ChatMessage(role="system", content=self.system_prompt),
                ChatMessage(role="user", content=user),
            ),
            json_mode=True,
            response_format=self.response_format,
            prompt_version=self._version,
            task="pairwise",
            hints={
                "question": question,
                "answer_a": a.answer,
                "answer_b": b.answer,
                "contexts_a": [c.text or "" for c in a.contexts],
                "contexts_b": [c.text or "" for c in b.contexts],
                "axes": [axis.name for axis in self.axes],
            },
        )

    async def judge(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> PairwiseJudgment:
        """Judge one ordering, with a correct ``reference`` answer when given. Provider failures propagate; an
        unreadable reply gives ``winner=None``."""
        response = await self._model.complete(self.request(question, a, b, reference))
        winner, scores_a, scores_b, reason = parse_pairwise_reply(response.text, self.axes)
        return PairwiseJudgment(
            winner=winner,
            scores_a=scores_a,
            scores_b=scores_b,
            reason=reason,
            judge=self.name,
            prompt_version=self._version,
            raw=response.text,
            tokens=response.usage,
            cost_usd=response.cost_usd,
            unpriced_calls=response.unpriced_calls,
        )
