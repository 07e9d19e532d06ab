"""Dev-time generator of the demo's production log: the champion answers every scripted conversation.

Reads ``data/conversations.yaml``, answers each user turn with the champion target (the raw question as
typed: production had no rewriter), and writes

- ``production.jsonl``: the canonical ragreplay log, with feedback that mostly says whether the champion's
  top chunk came from the right document (a superseded version counts as wrong), about 20% of turns left
  unlabelled and about 5% flipped, because users are noisy; plus a few edge cases (a system message, an AI
  greeting before the first question);
- ``ground_truth.jsonl``: one row per AI turn with the expected document, the champion's top document and
  the feedback given.

Everything random is seeded per conversation and turn, so the output only changes when the specs, the
corpus or the champion do. Run ``python -m ragreplay.demo.build_log`` and commit both files.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from ragreplay.core.ids import case_id
from ragreplay.core.types import Case, Feedback, Message, Role
from ragreplay.ports import Target
from ragreplay.targets.builtin_rag.corpus import load_corpus

DATA_DIR = Path(__file__).parent / "data"
SEED = 2026
MISSING_RATE = 0.20
"""Share of AI turns the user left without feedback."""
FLIP_RATE = 0.05
"""Share of AI turns whose feedback contradicts the champion's correctness."""
PERIOD_START = datetime(2026, 9, 1, tzinfo=UTC)
PERIOD_DAYS = 91  # September, October and November 2026
SYSTEM_EVERY = 11  # every 11th conversation starts with the system prompt the app logged
GREETING_EVERY = 9  # every 9th conversation (offset below) opens with an AI greeting
SYSTEM_PROMPT = "You are the Acme Logistics HR assistant. Answer from the HR policy documents only."
GREETINGS = {
    "en": "Hi! I'm the Acme HR assistant. Ask me anything about our HR policies.",
    "nl": "Hoi! Ik ben de HR-assistent van Acme. Stel gerust je vraag over de HR-regelingen.",
}


@dataclass(frozen=True)
class TurnSpec:
    """One user turn: the question as typed, the document that answers it and facts a right answer holds."""

    question: str
    expected_doc: str
    expected_facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConversationSpec:
    """A scripted conversation of the demo."""

    id: str
    user_id: str
    tags: dict[str, str]
    turns: tuple[TurnSpec, ...]


@dataclass(frozen=True)
class BuildSummary:
    """What a build wrote: conversations, AI turns, how many the champion got right, and the feedback mix."""

    conversations: int
    ai_turns: int
    champion_correct: int
    good: int
    bad: int
    unlabelled: int
    flipped: int


def load_specs(path: Path) -> list[ConversationSpec]:
    """Read the conversation specs from ``conversations.yaml``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    specs = []
    for raw in data["conversations"]:
        turns = tuple(
            TurnSpec(
                str(t["question"]), str(t["expected_doc"]), tuple(str(f) for f in t.get("expected_facts", ()))
            )
            for t in raw["turns"]
        )
        tags = {str(k): str(v) for k, v in raw["tags"].items()}
        specs.append(ConversationSpec(str(raw["id"]), str(raw["user_id"]), tags, turns))
    return specs


def build(out_dir: Path = DATA_DIR, target: Target | None = None, data_dir: Path = DATA_DIR) -> BuildSummary:
    """Answer every spec with ``target`` (default: the shipped champion) and write both files to ``out_dir``."""
    return asyncio.run(build_async(out_dir, target, data_dir))


async def build_async(out_dir: Path, target: Target | None = None, data_dir: Path = DATA_DIR) -> BuildSummary:
    """The async body of :func:`build`."""
    specs = load_specs(data_dir / "conversations.yaml")
    policies = {
        d.id: d.policy for d in load_corpus(data_dir / "corpus", str(data_dir / "champion.yaml")).documents
    }
    if target is None:
        from ragreplay.targets.loader import load_target

        target = load_target(data_dir / "champion.yaml")
    conversations: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    try:
        for number, spec in enumerate(specs):
            conv, rows = await _conversation(spec, number, target, policies)
            conversations.append(conv)
            truth.extend(rows)
    finally:
        await target.aclose()
    conversations.sort(key=lambda c: (c["messages"][0]["ts"], c["id"]))
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out_dir / "production.jsonl", conversations)
    _write_jsonl(out_dir / "ground_truth.jsonl", truth)
    return BuildSummary(
        conversations=len(conversations),
        ai_turns=len(truth),
        champion_correct=sum(r["champion_correct"] for r in truth),
        good=sum(r["feedback"] == "good" for r in truth),
        bad=sum(r["feedback"] == "bad" for r in truth),
        unlabelled=sum(r["feedback"] is None for r in truth),
        flipped=sum(r["feedback_noise"] == "flipped" for r in truth),
    )


async def _conversation(
    spec: ConversationSpec, number: int, target: Target, policies: dict[str, str | None]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rng = random.Random(f"{SEED}:{spec.id}")
    clock = _start_time(rng, spec.tags.get("department", ""))
    messages: list[dict[str, Any]] = []
    if number % SYSTEM_EVERY == 3:
        messages.append({"role": "system", "content": SYSTEM_PROMPT, "ts": _ts(clock)})
    if number % GREETING_EVERY == 5:
        messages.append(
            {"role": "ai", "content": GREETINGS[spec.tags.get("language", "en")], "ts": _ts(clock)}
        )
        clock += timedelta(seconds=rng.randint(5, 60))
    rows = []
    for turn_no, turn in enumerate(spec.turns):
        if turn_no:
            clock += timedelta(seconds=rng.randint(20, 240))
        messages.append({"role": "human", "content": turn.question, "ts": _ts(clock)})
        index = len(messages)
        answer = await target.answer(turn.question, _case(spec, messages, index, clock))
        latency_ms = round(rng.lognormvariate(6.7, 0.35))  # about 800 ms, as the app measured it
        clock += timedelta(milliseconds=latency_ms)
        top = answer.contexts[0].id.split("#", 1)[0] if answer.contexts else None
        correct = top == turn.expected_doc
        feedback, noise = _feedback(correct, random.Random(f"{SEED}:{spec.id}:{turn_no}:feedback"))
        message: dict[str, Any] = {"role": "ai", "content": answer.text, "ts": _ts(clock)}
        if feedback is not None:
            message["feedback"] = feedback.value
        message["retrieved"] = [{"id": c.id, "score": c.score} for c in answer.contexts]
        message["latency_ms"] = latency_ms
        messages.append(message)
        rows.append(_truth_row(spec, turn_no, index, turn, top, correct, feedback, noise, policies))
    conv = {"id": spec.id, "user_id": spec.user_id, "tags": spec.tags, "messages": messages}
    return conv, rows


def _case(spec: ConversationSpec, messages: Sequence[dict[str, Any]], index: int, clock: datetime) -> Case:
    """The case production would hand its RAG: the raw question, with the dialogue so far as history."""
    question = messages[-1]["content"]
    history = tuple(
        Message(role=Role(m["role"]), content=m["content"])
        for m in messages[:-1]
        if m["role"] in ("human", "ai")
    )
    return Case(
        id=case_id(spec.id, index, question, ""),
        conversation_id=spec.id,
        turn_index=index,
        query=question,
        history=history,
        old_answer="",
        feedback=Feedback.GOOD,  # not known yet when production answered; no target reads it
        tags=spec.tags,
        ts=clock,
        user_id=spec.user_id,
    )


def _feedback(correct: bool, rng: random.Random) -> tuple[Feedback | None, str]:
    """The user's label: none (MISSING_RATE), the opposite of the truth (FLIP_RATE), else the truth."""
    draw = rng.random()
    if draw < MISSING_RATE:
        return None, "missing"
    honest = Feedback.GOOD if correct else Feedback.BAD
    if draw < MISSING_RATE + FLIP_RATE:
        return (Feedback.BAD if correct else Feedback.GOOD), "flipped"
    return honest, "none"


def _truth_row(
    spec: ConversationSpec,
    turn_no: int,
    index: int,
    turn: TurnSpec,
    top: str | None,
    correct: bool,
    feedback: Feedback | None,
    noise: str,
    policies: dict[str, str | None],
) -> dict[str, Any]:
    expected_policy = policies.get(turn.expected_doc)
    outdated = (
        top is not None
        and not correct
        and expected_policy is not None
        and policies.get(top) == expected_policy
    )
    return {
        "conversation_id": spec.id,
        "message_index": index,
        "turn": turn_no,
        "question": turn.question,
        "expected_doc": turn.expected_doc,
        "expected_facts": list(turn.expected_facts),
        "champion_top_doc": top,
        "champion_correct": correct,
        "champion_outdated": outdated,
        "feedback": feedback.value if feedback is not None else None,
        "feedback_noise": noise,
        "tags": spec.tags,
    }


def _start_time(rng: random.Random, department: str) -> datetime:
    """A working-hours moment in Sept-Nov 2026; office staff rarely ask at weekends, the warehouse does."""
    day = PERIOD_START + timedelta(days=rng.randrange(PERIOD_DAYS))
    if day.weekday() >= 5 and department != "operations":
        day += timedelta(days=7 - day.weekday())
        if day >= PERIOD_START + timedelta(days=PERIOD_DAYS):
            day -= timedelta(days=7)
    return day + timedelta(hours=rng.randint(6, 18), minutes=rng.randrange(60), seconds=rng.randrange(60))


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    """Regenerate the shipped log with the champion and print what it holds."""
    summary = build()
    print(summary)
    print(f"champion top-1 document accuracy: {summary.champion_correct / summary.ai_turns:.1%}")


if __name__ == "__main__":
    main()
