"""The regression-set build at production volume: a store of N judged shadow rows over 30 days, then
`regset build` over the last 7 days, timed with its peak memory, for the exact and the two-phase design.

    python benchmarks/regset_scale.py make --rows 200000 --db /tmp/shadow200k.db
    python benchmarks/regset_scale.py measure --db /tmp/shadow200k.db --design two-phase --embedder hash
    python benchmarks/regset_scale.py measure --db /tmp/shadow200k.db --design exact --embedder hash

``make`` writes rows in time order (as a shadow log is appended) whose questions follow a Zipf-like frequency
over ``rows / 3`` distinct questions (a few asked often, most asked once), half with a few words reworded (near
duplicates), with judgments landing in every stratum and a user's feedback on some. ``measure`` runs one build
in this process and prints a JSON line: wall seconds, peak RSS, candidates read, questions per stratum held and
kept by phase one, items chosen. Run each ``measure`` in its own process (peak RSS is the process's).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal, cast

from ragreplay.core.pairwise import AxisScores, PairwiseJudgment
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Feedback, Fit
from ragreplay.judges.position import PairOutcome
from ragreplay.regset.build import TokenHashEmbedder, build_regset
from ragreplay.store import Store

NOW = datetime(2026, 12, 1, tzinfo=UTC)
TOPICS = [
    "parental leave",
    "the bike lease",
    "remote work abroad",
    "expense claims",
    "the pension plan",
    "sick leave",
    "overtime pay",
    "the laptop policy",
    "training budget",
    "holiday carry-over",
    "the VPN password",
    "travel insurance",
]
FORMS = [
    "how does {t} work for {r}",
    "what is the rule on {t} for {r}",
    "can {r} ask about {t}",
    "where do {r} find {t}",
    "who approves {t} for {r}",
    "is {t} different for {r}",
]
ROLES = ["part-timers", "managers", "new hires", "contractors", "interns", "the Amsterdam office", "nurses"]
BATCH = 5_000


def _scores(value: int) -> AxisScores:
    return AxisScores(groundedness=value, completeness=value, directness=value, recency=value)


def _outcome(winner: str, consistent: bool, champion: int, challenger: int) -> PairOutcome:
    def judgment(w: str, a: int, b: int) -> PairwiseJudgment:
        return PairwiseJudgment(
            winner=cast(Literal["A", "B", "tie"], w),
            scores_a=_scores(a),
            scores_b=_scores(b),
            reason="",
            judge="fake:default",
            prompt_version="p1",
        )

    first = {"x": "A", "y": "B", "tie": "tie"}[winner]
    second = {"x": "B", "y": "A", "tie": "tie"}[winner] if consistent else "tie"
    return PairOutcome(
        winner=cast(Literal["x", "y", "tie"], winner if consistent else "tie"),
        consistent=consistent,
        judgments=[
            ("xy", judgment(first, champion, challenger)),
            ("yx", judgment(second, challenger, champion)),
        ],
        mode="both",
    )


def question(number: int) -> str:
    """The ``number``-th distinct question (odd numbers reworded: a near duplicate of the one before)."""
    base = number // 2
    topic, form, role = TOPICS[base % len(TOPICS)], FORMS[(base // 12) % len(FORMS)], ROLES[(base // 72) % 7]
    text = form.format(t=topic, r=role) + f" (case {base // 504})"
    return text.replace("how does", "how exactly does") + " please" if number % 2 else text


def make(db: str, rows: int, seed: int = 0) -> None:
    """Write ``rows`` judged shadow rows over the 30 days before :data:`NOW`."""
    rng = random.Random(seed)
    distinct = max(1, rows // 3)
    outcomes = [
        (Fit.FIT, _outcome("tie", True, 5, 5), None),  # win: agreed, scored high
        (Fit.NO_FIT, _outcome("x", True, 4, 3), Feedback.GOOD),  # win: liked
        (Fit.NO_FIT, _outcome("x", False, 3, 3), None),  # contested: close call
        (Fit.NO_FIT, _outcome("y", True, 1, 4), None),  # wound: champion scored 1
        (Fit.NO_FIT, _outcome("x", True, 4, 3), Feedback.BAD),  # wound: disliked
    ]
    with Store.open(db) as store:
        for start in range(0, rows, BATCH):
            batch_rows: list[ShadowRow] = []
            judgments: list[ShadowJudgmentRecord] = []
            feedback: list[ShadowFeedback] = []
            for n in range(start, min(rows, start + BATCH)):
                number = (
                    min(int(rng.paretovariate(1.1)) - 1, distinct - 1) if n % 2 else rng.randrange(distinct)
                )
                row = ShadowRow(
                    id=f"row-{n:08d}",
                    ts=NOW
                    - timedelta(
                        seconds=30 * 86_400 * (1 - (n + rng.random()) / rows)
                    ),  # appended in time order
                    request_id=f"req-{n:08d}",
                    query=question(number),
                    tags={"dept": ("hr", "it", "finance")[n % 3]},
                    challenger="b",
                    champion_answer=ShadowAnswer(text=f"champion answer {n}", chunk_ids=[f"doc{n % 97}#1"]),
                    challenger_answer=ShadowAnswer(
                        text=f"challenger answer {n}", chunk_ids=[f"doc{n % 89}#2"]
                    ),
                )
                fit, judged, label = outcomes[number % len(outcomes)]
                batch_rows.append(row)
                judgments.append(
                    ShadowJudgmentRecord(
                        row_id=row.id,
                        challenger="b",
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
                )
                if label is not None:
                    feedback.append(ShadowFeedback(request_id=row.request_id, feedback=label, ts=row.ts))
            store.shadow_rows.write_shadow_rows(batch_rows)
            store.shadow_judgments.save_shadow_judgments(judgments)
            store.shadow_feedback.write_shadow_feedback(feedback)
            print(f"\r{min(rows, start + BATCH):,} of {rows:,} rows", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def measure(db: str, design: Literal["exact", "two-phase"], embedder: str, days: int) -> dict[str, object]:
    """One build over the last ``days`` days: its wall time, peak RSS and figures."""
    started = time.perf_counter()
    with Store.open(db) as store:
        built = build_regset(
            store,
            NOW - timedelta(days=days),
            NOW + timedelta(minutes=1),
            {"win": 80, "contested": 60, "wound": 60},
            sources=("shadow",),
            embedder=embedder if embedder != "hash" else "use",
            embed_with=TokenHashEmbedder() if embedder == "hash" else None,
            design=design,
            now=NOW,
        )
    wall = time.perf_counter() - started
    figures = built.figures
    return {
        "design": design,
        "embedder": embedder,
        "days": days,
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "candidates": figures.candidates,
        "pool_sizes": figures.pool_sizes,
        "phase_one": figures.phase_one,
        "near_duplicates_merged": figures.near_duplicates_merged,
        "items": len(built.items),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``make`` a store or ``measure`` a build."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make", help="write a store of judged shadow rows")
    made.add_argument("--rows", type=int, required=True)
    made.add_argument("--db", required=True)
    timed = sub.add_parser("measure", help="time one regset build")
    timed.add_argument("--db", required=True)
    timed.add_argument("--design", choices=["exact", "two-phase"], default="two-phase")
    timed.add_argument("--embedder", choices=["hash", "use", "e5"], default="hash")
    timed.add_argument("--days", type=int, default=7)
    args = parser.parse_args(argv)
    if args.command == "make":
        make(args.db, args.rows)
        return 0
    design = cast(Literal["exact", "two-phase"], args.design)
    print(json.dumps(measure(args.db, design, args.embedder, args.days)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
