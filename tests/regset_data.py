"""A store seeded for the regression set's tests: a week of shadow rows with judgments and users' feedback,
built to land in known strata, and the demo's shipped production log ingested for the replay side."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ragreplay.core.pairwise import AxisScores, PairwiseJudgment
from ragreplay.core.regset import Stratum, question_key
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.ingest import ingest_file
from ragreplay.judges.position import PairOutcome
from ragreplay.regset.build import BuiltSet, TokenHashEmbedder, build_regset
from ragreplay.store import Store

PRODUCTION_LOG = Path(__file__).parents[1] / "src" / "ragreplay" / "demo" / "data" / "production.jsonl"
REPLAY_SINCE, REPLAY_UNTIL = "2026-09-01", "2026-12-01"
"""A window holding every case of the shipped log (its messages run from 2026-09-01 to 2026-11-30)."""


def demo_questions() -> list[str]:
    """Distinct questions of the shipped log (more than three words: no follow-ups), sorted."""
    found: set[str] = set()
    for line in PRODUCTION_LOG.read_text(encoding="utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            if message["role"] == "human" and len(message["content"].split()) > 3:
                found.add(message["content"].strip())
    return sorted(found)


def scores(value: int) -> AxisScores:
    return AxisScores(groundedness=value, completeness=value, directness=value, recency=value)


def outcome(winner: str, consistent: bool, champion: int, challenger: int) -> PairOutcome:
    """Both orders judged; the champion (``x``) is A in ``xy`` and B in ``yx``."""
    a_first = {"x": "A", "y": "B", "tie": "tie"}[winner]
    b_first = {"x": "B", "y": "A", "tie": "tie"}[winner] if consistent else "tie"

    def judgment(w: str, a: int, b: int) -> PairwiseJudgment:
        return PairwiseJudgment(
            winner=w,  # type: ignore[arg-type]
            scores_a=scores(a),
            scores_b=scores(b),
            reason="",
            judge="fake:default",
            prompt_version="p1",
        )

    return PairOutcome(
        winner=winner if consistent else "tie",  # type: ignore[arg-type]
        consistent=consistent,
        judgments=[
            ("xy", judgment(a_first, champion, challenger)),
            ("yx", judgment(b_first, challenger, champion)),
        ],
        mode="both",
    )


@dataclass
class Seeded:
    """What :func:`seed_shadow` wrote: the expected stratum of each question key, and the keys left out."""

    strata: dict[str, Stratum] = field(default_factory=dict)
    questions: dict[str, str] = field(default_factory=dict)
    outside: set[str] = field(default_factory=set)
    """Keys of rows that must not be candidates (outside the window, champion failed)."""


KINDS: list[tuple[Stratum, int]] = [("win", 14), ("contested", 9), ("wound", 7)]


def seed_shadow(store: Store, now: datetime) -> Seeded:
    """30 questions in the last 6 days: 14 wins (half liked by users, half judged FIT with the champion scored
    5 across the board), 9 contested (different answers, a tie with the two orders disagreeing), 7 wounds
    (disliked, or the champion scored 1). Plus one request judged for two challengers, one row whose champion
    failed, and one row 10 days old."""
    questions = demo_questions()
    seeded = Seeded()
    rows: list[ShadowRow] = []
    judgments: list[ShadowJudgmentRecord] = []
    feedback: list[ShadowFeedback] = []
    n = 0
    for stratum, count in KINDS:
        for i in range(count):
            question = questions[n * 7 % len(questions)]
            n += 1
            row = ShadowRow(
                id=f"row-{n:03d}",
                ts=now - timedelta(hours=5 * n),
                request_id=f"req-{n:03d}",
                query=question,
                user_hash=f"secret-user-hash-{n}",
                tags={"dept": "hr" if n % 2 else "it"},
                challenger="b",
                champion_answer=ShadowAnswer(text=f"champion answer {n}", chunk_ids=[f"doc{n}#1"]),
                challenger_answer=ShadowAnswer(text=f"challenger answer {n}", chunk_ids=[f"doc{n}#2"]),
            )
            rows.append(row)
            seeded.strata[question_key(question)] = stratum
            seeded.questions[question_key(question)] = question
            label: Feedback | None = None
            if stratum == "win" and i % 2 == 0:
                label = Feedback.GOOD
                judged = outcome("x", True, 4, 3)
                fit = Fit.NO_FIT
            elif stratum == "win":
                judged, fit = outcome("tie", True, 5, 5), Fit.FIT
            elif stratum == "contested":
                judged, fit = outcome("x", False, 3, 3), Fit.NO_FIT
            elif i % 2 == 0:
                label, judged, fit = Feedback.BAD, outcome("x", True, 4, 3), Fit.NO_FIT
            else:
                judged, fit = outcome("y", True, 1, 4), Fit.NO_FIT
            judgments.append(judgment_record(row, fit, judged))
            if label is not None:
                feedback.append(ShadowFeedback(request_id=row.request_id, feedback=label, ts=now))
    # the first win's request was also answered by challenger c: one request, two rows
    first = rows[0]
    twin = first.model_copy(update={"id": "row-001c", "challenger": "c"})
    rows.append(twin)
    judgments.append(judgment_record(twin, Fit.FIT, outcome("tie", True, 5, 5)))
    failed = ShadowRow(
        id="row-failed",
        ts=now - timedelta(hours=1),
        request_id="req-failed",
        query=questions[-1],
        challenger="b",
        champion_answer=ShadowAnswer(error="TimeoutError: 30 s"),
        challenger_answer=ShadowAnswer(text="an answer"),
    )
    old = failed.model_copy(
        update={
            "id": "row-old",
            "ts": now - timedelta(days=10),
            "request_id": "req-old",
            "query": questions[-2],
            "champion_answer": ShadowAnswer(text="old answer"),
        }
    )
    feedback.append(ShadowFeedback(request_id="req-old", feedback=Feedback.BAD, ts=now))
    rows += [failed, old]
    seeded.outside = {question_key(questions[-1]), question_key(questions[-2])}
    store.shadow_rows.write_shadow_rows(rows)
    store.shadow_judgments.save_shadow_judgments(judgments)
    store.shadow_feedback.write_shadow_feedback(feedback)
    return seeded


def judgment_record(row: ShadowRow, fit: Fit, judged: PairOutcome) -> ShadowJudgmentRecord:
    return ShadowJudgmentRecord(
        row_id=row.id,
        challenger=row.challenger,
        judged_at=row.ts + timedelta(minutes=5),
        fit=fit,
        winner=judged.winner,
        consistent=judged.consistent,
        judge="fake:default",
        judge_prompt_version="p1",
        fit_judge="fake:default",
        fit_judge_prompt_version="f1",
        payload={"order": "both", "outcome": judged.model_dump(mode="json")},
    )


def ingest_production(store: Store) -> None:
    """The shipped production log (216 labelled cases, 118 bad, 98 good)."""
    ingest_file(PRODUCTION_LOG, store)


def build_shadow_regset(store: Store, now: datetime, **kwargs: Any) -> BuiltSet:
    """A version built from the shadow rows :func:`seed_shadow` wrote for ``now`` (the week before it, up to 5
    questions per stratum), embedded by token hashing; ``kwargs`` go to ``build_regset``."""
    return build_regset(
        store,
        now - timedelta(days=7),
        now + timedelta(minutes=1),
        {"win": 5, "contested": 5, "wound": 5},
        sources=("shadow",),
        embed_with=TokenHashEmbedder(),
        **kwargs,
    )
