"""The rubric judge: every criterion of a :class:`~ragreplay.core.rubric.Rubric` scored 1-5, each with a short
reasoning, in one call per row.

The judge is shown the rubric in the system message and the question, the answer, the numbered contexts and the
reference fenced as data (:mod:`ragreplay.judges.fence`), and asked for one JSON object (its schema, built from
the rubric's criteria, sent as ``response_format``)::

    {"criteria": {"completeness": {"reasoning": "...", "score": 4}, "tone": {"reasoning": "...", "score": 5}}}

Each criterion gives the metric ``rubric.<name>`` = (score - 1) / 4, and ``rubric.overall`` is their mean
weighted by the rubric's weights. A criterion the reply gives no readable score for is undetermined with the
reason (``unreadable reply: ...``), never a guess; a reply with no readable object makes every criterion
undetermined. The prompt's version hashes the prompt's text, the schema and the rubric: a changed rubric never
reuses old replies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.eval import CriterionScore, EvalRow, MetricValue
from ragreplay.core.rubric import METRIC_PREFIX, OVERALL, Rubric, normalised
from ragreplay.judges.fence import escape_tags
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.judges.structured import structured_prompt_version, structured_request, structured_system
from ragreplay.metrics.llm import ROW_BLOCKS, fenced_row, for_repeat, row_hints
from ragreplay.ports import ChatModel

TASK = "rubric"
"""The request's task: the fake model answers it from the hints (:mod:`ragreplay.providers.fake`)."""
MAX_REASONING = 500
"""Characters of a criterion's reasoning kept with the row."""

SYSTEM_PROMPT = """\
You grade an answer given by a retrieval-augmented assistant against a rubric. <question> holds the question, \
<checked_answer> the answer, <contexts> the numbered document chunks the assistant was given, and \
<reference>, when present, a correct answer written by a person.
{rules}
The rubric "{name}" has these criteria; each lists what some scores mean (a score between two listed ones \
means in between):
{criteria}
For every criterion, first write one or two sentences of reasoning about this answer, then give a whole number \
from 1 to 5. Judge each criterion on its own. A longer answer is not a better one unless a criterion says so.
Reply with one JSON object and nothing else: "criteria" maps every criterion's name to its "reasoning" and \
"score", shaped like this example (its names and values say nothing about the material you are shown):
{example}"""

USER_TEMPLATE = "Grade the answer against every criterion of the rubric.\n\n" + ROW_BLOCKS

_EXAMPLE = {
    "criteria": {
        "criterion_one": {"reasoning": "It answers the question directly.", "score": 4},
        "criterion_two": {"reasoning": "One statement is in no context.", "score": 2},
    }
}
_FENCED = ("question", "checked_answer", "contexts", "reference")


def reply_schema(rubric: Rubric) -> dict[str, Any]:
    """The reply's JSON schema: every criterion required, each a reasoning and a score of 1-5."""
    entry = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        },
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }
    names = [c.name for c in rubric.criteria]
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "object",
                "properties": dict.fromkeys(names, entry),
                "required": names,
                "additionalProperties": False,
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }


def prompt_version(rubric: Rubric) -> str:
    """``rubric-1.<hash>`` of the prompt's text, its example, the schema and the rubric itself."""
    return structured_prompt_version(
        "rubric-1",
        SYSTEM_PROMPT,
        USER_TEMPLATE,
        _EXAMPLE,
        reply_schema(rubric),
        rubric=rubric.model_dump(mode="json"),
    )


def format_criteria(rubric: Rubric) -> str:
    """The criteria as the judge reads them: name, description, then each described score."""
    blocks = []
    for c in rubric.criteria:
        levels = "\n".join(f"  {score}: {escape_tags(text)}" for score, text in c.scores.items())
        blocks.append(f"- {c.name}: {escape_tags(c.description)}\n{levels}")
    return "\n".join(blocks)


def system_prompt(rubric: Rubric) -> str:
    """The system message: the data rules, the rubric and the example."""
    return structured_system(
        SYSTEM_PROMPT,
        _FENCED,
        "grade",
        _EXAMPLE,
        name=escape_tags(rubric.name),
        criteria=format_criteria(rubric),
    )


def build_request(row: EvalRow, rubric: Rubric, repeat: int = 0) -> ChatRequest:
    """The one request that scores ``row`` on every criterion (``repeat``: see :func:`~.llm.for_repeat`)."""
    return structured_request(
        system=system_prompt(rubric),
        user=USER_TEMPLATE.format(**fenced_row(row)),
        schema_name="rubric_scores",
        schema=reply_schema(rubric),
        prompt_version=for_repeat(prompt_version(rubric), repeat),
        task=TASK,
        hints={**row_hints(row, repeat), "criteria": [c.name for c in rubric.criteria]},
    )


def _score(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float) or value not in (1, 2, 3, 4, 5):
        return None
    return int(value)


def read_criteria(text: str, rubric: Rubric) -> tuple[dict[str, CriterionScore], dict[str, str]]:
    """Per criterion its score and reasoning, and per criterion that has no readable score, why."""
    reply = read_reply_object(text, ("criteria",))
    obj = reply.value
    graded = obj.get("criteria") if obj is not None else None
    if not isinstance(graded, Mapping):
        problem = reply.problem if obj is None else "the reply has no 'criteria' object"
        return {}, {c.name: problem for c in rubric.criteria}
    scores: dict[str, CriterionScore] = {}
    problems: dict[str, str] = {}
    for c in rubric.criteria:
        item = graded.get(c.name)
        if not isinstance(item, Mapping):
            problems[c.name] = f"no grade for '{c.name}'"
            continue
        score = _score(item.get("score"))
        if score is None:
            problems[c.name] = f"'{c.name}' score is not 1-5: {item.get('score')!r}"[:200]
            continue
        reasoning = item.get("reasoning")
        scores[c.name] = CriterionScore(
            score=score, reasoning=str(reasoning)[:MAX_REASONING] if reasoning is not None else ""
        )
    return scores, problems


def metrics_from_reply(text: str, rubric: Rubric) -> tuple[dict[str, MetricValue], dict[str, CriterionScore]]:
    """The rubric's metrics (every criterion and ``rubric.overall``) and the criteria's grades from a reply."""
    scores, problems = read_criteria(text, rubric)
    metrics: dict[str, MetricValue] = {}
    for c in rubric.criteria:
        if c.name in scores:
            metrics[c.metric] = MetricValue.of(normalised(scores[c.name].score))
        else:
            metrics[c.metric] = MetricValue.undetermined(f"unreadable reply: {problems[c.name]}")
    overall = rubric.overall({name: normalised(grade.score) for name, grade in scores.items()})
    metrics[METRIC_PREFIX + OVERALL] = (
        MetricValue.of(overall)
        if overall is not None
        else MetricValue.undetermined("a criterion is undetermined")
    )
    return metrics, scores


@dataclass(frozen=True)
class RubricScores:
    """One row's rubric metrics, the criteria's grades and the call."""

    metrics: dict[str, MetricValue]
    criteria: dict[str, CriterionScore]
    response: ChatResponse


async def score_rubric(model: ChatModel, row: EvalRow, rubric: Rubric, repeat: int = 0) -> RubricScores:
    """Every criterion of ``rubric`` for ``row`` from one call to ``model`` (a provider error propagates)."""
    response = await model.complete(build_request(row, rubric, repeat))
    metrics, criteria = metrics_from_reply(response.text, rubric)
    return RubricScores(metrics=metrics, criteria=criteria, response=response)
