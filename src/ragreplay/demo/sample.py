"""A deterministic sample of two logged periods of an HR assistant, with the ground truth of every case.

``production`` is the log users gave feedback on; ``candidate`` holds what a new configuration answered to the same
turns. Each labelled turn follows a plan (was the old answer liked? did the candidate keep it, change it, or produce
something a judge cannot read? is the candidate's answer missing?), so tests and the demo know the exact verdicts a
correct pipeline must report. The log also carries the edge cases a naive extractor gets wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragreplay.core.types import SkipReason

UNPARSEABLE_MARKER = "[[unparseable]]"


@dataclass(frozen=True)
class Topic:
    """One HR question with its follow-up, the production answers and a candidate's different answers."""

    subject: str
    department: str
    question: str
    answer: str
    changed: str
    follow_up: str
    follow_answer: str
    follow_changed: str


TOPICS = (
    Topic(
        "Parental leave",
        "hr",
        "How long is Parental leave at Acme?",
        "Parental leave is 16 weeks at full pay for every parent.",
        "Employees may request unpaid time off after their first year of service.",
        "Does it apply to adoptive parents?",
        "Yes, adoptive parents receive the same 16 weeks.",
        "Adoption requests go to the benefits desk for individual review.",
    ),
    Topic(
        "Annual bonus",
        "finance",
        "When is the Annual bonus paid out?",
        "The annual bonus is paid with the March salary each year.",
        "Bonuses depend on team targets set by each director.",
        "How is it calculated?",
        "It is 8 percent of base salary times the company score.",
        "Managers decide amounts during calibration meetings in winter.",
    ),
    Topic(
        "Remote work",
        "hr",
        "Can I work remotely from abroad under the Remote work policy?",
        "Remote work from abroad is allowed for up to 30 days per year.",
        "Working outside the country needs written approval from legal.",
        "Who approves it?",
        "Your line manager approves it in the HR portal.",
        "Requests are reviewed by the tax office each quarter.",
    ),
    Topic(
        "Sick leave",
        "hr",
        "How do I report Sick leave?",
        "Call your manager before 9:00 and register the absence in the HR portal.",
        "Send a medical certificate by post within one week.",
        "What if it lasts longer than a week?",
        "After seven days a doctor's note is required.",
        "Long absences are handled by the occupational health service.",
    ),
    Topic(
        "Travel expenses",
        "finance",
        "How do I claim Travel expenses?",
        "Submit receipts in the expense tool within 30 days of the trip.",
        "Travel is booked centrally so no claims are needed.",
        "Is there a daily limit for it?",
        "Meals are reimbursed up to 45 euros per day.",
        "Limits vary per country according to the travel desk table.",
    ),
    Topic(
        "Pension plan",
        "finance",
        "How much does Acme contribute to the Pension plan?",
        "Acme contributes 6 percent of salary to the pension plan.",
        "Contributions follow the collective agreement schedule.",
        "Can I increase it?",
        "Yes, you may add up to 4 percent extra each month.",
        "Voluntary top-ups are not offered at this time.",
    ),
    Topic(
        "Training budget",
        "hr",
        "What is the yearly Training budget per employee?",
        "Each employee has 1500 euros per year for training.",
        "Training is funded by department heads on request.",
        "Does it roll over?",
        "Unused budget rolls over for one year.",
        "Leftover amounts return to the central pool in December.",
    ),
    Topic(
        "Overtime",
        "operations",
        "Is Overtime paid for warehouse staff?",
        "Overtime is paid at 150 percent for warehouse staff.",
        "Extra hours are compensated with time off only.",
        "Does it need approval?",
        "Yes, the shift lead must approve it beforehand.",
        "Approval is automatic through the rostering system.",
    ),
)

# (feedback, candidate behaviour) for the first and the follow-up turn of each conversation.
# behaviour: "same" keeps the old answer, "changed" gives different facts, "garbled" yields an unreadable judge
# reply, "none" = no feedback on that turn.
PLANS = (
    (("good", "same"), ("good", "same")),
    (("good", "same"), ("bad", "changed")),
    (("bad", "changed"), ("good", "same")),
    (("good", "changed"), ("bad", "same")),
    (("bad", "same"), (None, "same")),
    (("good", "same"), ("good", "changed")),
    (("bad", "changed"), ("bad", "changed")),
    (("good", "same"), ("bad", "same")),
    (("good", "garbled"), ("good", "same")),
    ((None, "same"), ("bad", "changed")),
)


@dataclass(frozen=True)
class Expected:
    """The ground truth of one labelled turn."""

    conversation_id: str
    turn_index: int
    feedback: str
    outcome: str  # a Verdict value, "UNSCORABLE" or "ERROR"


@dataclass(frozen=True)
class Sample:
    """The two logs and the ground truth."""

    production: list[dict[str, Any]]
    candidate: list[dict[str, Any]]
    expected: list[Expected]
    skips: dict[SkipReason, int]

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write ``production.jsonl`` and ``candidate.jsonl`` into ``folder``; return their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        paths = (folder / "production.jsonl", folder / "candidate.jsonl")
        for path, rows in zip(paths, (self.production, self.candidate), strict=True):
            with path.open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return paths

    def outcome_counts(self) -> dict[str, int]:
        """How many labelled turns should end in each verdict, UNSCORABLE or ERROR."""
        counts: dict[str, int] = {}
        for e in self.expected:
            counts[e.outcome] = counts.get(e.outcome, 0) + 1
        return counts


def _outcome(feedback: str, behaviour: str, missing: bool) -> str:
    if missing:
        return "ERROR"
    if behaviour == "garbled":
        return "UNSCORABLE"
    return f"{feedback.upper()}_{'FIT' if behaviour == 'same' else 'NO_FIT'}"


def _new_text(old: str, changed: str, behaviour: str) -> str:
    if behaviour == "same":
        return old
    if behaviour == "garbled":
        return f"{changed} {UNPARSEABLE_MARKER}"
    return changed


def build_sample(n_conversations: int = 60, start: datetime | None = None) -> Sample:
    """Build ``n_conversations`` conversations (deterministic), the candidate's log and the ground truth.

    Every 10th conversation opens with an AI greeting, every 7th has a system prompt, every 9th has two AI messages
    in a row, every 13th has the candidate's log missing (its cases must error, not vanish).
    """
    clock = start or datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    production: list[dict[str, Any]] = []
    candidate: list[dict[str, Any]] = []
    expected: list[Expected] = []
    skips: dict[SkipReason, int] = {}

    def skip(reason: SkipReason) -> None:
        skips[reason] = skips.get(reason, 0) + 1

    for i in range(n_conversations):
        topic = TOPICS[i % len(TOPICS)]
        plan = PLANS[i % len(PLANS)]
        conv_id = f"conv_{i:03d}"
        missing = i % 13 == 12
        old_msgs: list[dict[str, Any]] = []
        new_msgs: list[dict[str, Any]] = []

        def add(
            role: str,
            content: str,
            new_content: str | None = None,
            feedback: str | None = None,
            chunks: tuple[str, ...] = (),
        ) -> int:
            nonlocal clock
            clock += timedelta(minutes=3)
            msg: dict[str, Any] = {"role": role, "content": content, "ts": clock.isoformat()}
            if feedback:
                msg["feedback"] = feedback
            if chunks:
                msg["retrieved"] = [{"id": c, "score": round(0.9 - 0.1 * k, 2)} for k, c in enumerate(chunks)]
            # called only within this iteration, so the loop's lists are the right ones
            old_msgs.append(msg)  # noqa: B023
            new_msgs.append({"role": role, "content": content if new_content is None else new_content})  # noqa: B023
            return len(old_msgs) - 1  # noqa: B023

        if i % 7 == 3:
            add("system", "You are Acme's HR assistant.")
            skip(SkipReason.SYSTEM_OR_TOOL)
        if i % 10 == 5:
            add("ai", "Hello! Ask me anything about Acme's HR policies.", feedback="good")
            skip(SkipReason.NO_PRECEDING_HUMAN)
        doc = topic.subject.lower().replace(" ", "-")
        turns = (
            (topic.question, topic.answer, topic.changed, plan[0]),
            (topic.follow_up, topic.follow_answer, topic.follow_changed, plan[1]),
        )
        for t, (question, answer, changed, (feedback, behaviour)) in enumerate(turns):
            add("human", question)
            index = add(
                "ai",
                answer,
                _new_text(answer, changed, behaviour),
                feedback,
                chunks=(f"{doc}#{t + 1}", f"{doc}#{t + 4}"),
            )
            if feedback is None:
                skip(SkipReason.NO_FEEDBACK)
            else:
                expected.append(Expected(conv_id, index, feedback, _outcome(feedback, behaviour, missing)))
            if t == 0 and i % 9 == 4:
                add("ai", "Is there anything else I can help with?", feedback="bad")
                skip(SkipReason.CONSECUTIVE_AI)
        tags = {"department": topic.department, "channel": "web" if i % 2 else "teams"}
        production.append({"id": conv_id, "user_id": f"u{i % 17}", "tags": tags, "messages": old_msgs})
        if not missing:
            candidate.append({"id": conv_id, "user_id": f"u{i % 17}", "tags": tags, "messages": new_msgs})
    return Sample(production=production, candidate=candidate, expected=expected, skips=skips)
