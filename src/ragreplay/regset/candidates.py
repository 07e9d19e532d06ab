"""The questions a build can choose from: shadow rows and labelled replay cases seen in a window.

- **Shadow rows** (``ts`` in the window): the judges' decisions of the row (agreement, winner, order
  consistency; champion and challenger scores from the stored pair outcome's axis scores, mean over the judged
  orders, and the champion's lowest axis), and the user's feedback on that request when there is some. Rows
  not judged yet still count by their feedback. A row whose champion answer failed is left out: the user got
  no answer, and there is no question-level signal in an outage. Texts are already redacted in the shadow log.
- **Replay cases** (ingested logs; ``ts`` in the window, or any time for cases without ``ts``): the user's
  GOOD/BAD is the feedback; the question is the case's pinned rewrite when it has one. A follow-up with no
  pinned rewrite ("and for part-timers?") is left out and counted: it cannot be asked on its own (run
  `ragreplay run` first, which pins standalone questions). The log's questions and answers go through the
  redactor.

No candidate holds a user id or a user hash.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragreplay.core.regset import Candidate, JudgeWinner
from ragreplay.core.shadow import ShadowJudgmentRecord, ShadowRow
from ragreplay.core.types import Case, Feedback
from ragreplay.judges.position import PairOutcome, side_scores
from ragreplay.replay.rewrite import is_follow_up
from ragreplay.shadow.privacy import Redactor
from ragreplay.store import Store

_WINNERS: dict[str, JudgeWinner] = {"x": "champion", "y": "challenger", "tie": "tie"}


@dataclass
class CandidateCounts:
    """What reading the window found, for the build's report."""

    shadow_rows: int = 0
    shadow_judged: int = 0
    shadow_with_feedback: int = 0
    shadow_champion_failed: int = 0
    """Rows left out: the champion's answer failed."""
    replay_cases: int = 0
    replay_rewritten: int = 0
    """Cases asked as their pinned rewrite."""
    replay_follow_ups_unpinned: int = 0
    """Follow-ups left out: no pinned standalone question."""

    def as_dict(self) -> dict[str, int]:
        """The counts by name."""
        return dict(self.__dict__)


@dataclass
class Candidates:
    """The candidates of a window and what reading them found."""

    items: list[Candidate] = field(default_factory=list)
    counts: CandidateCounts = field(default_factory=CandidateCounts)


def judge_signal(record: ShadowJudgmentRecord) -> dict[str, Any]:
    """The candidate fields a stored shadow judgment gives (none for a row that could not be judged):
    agreement, winner (``x`` is the champion, ``y`` the challenger), order consistency and the sides' scores."""
    if record.error is not None:
        return {}
    signal: dict[str, Any] = {
        "agreement": record.fit,
        "judge_winner": None if record.winner is None else _WINNERS[record.winner],
        "consistent": record.consistent,
    }
    outcome = record.payload.get("outcome")
    if outcome is not None:
        scores = side_scores(PairOutcome.model_validate(outcome))
        signal |= {
            "champion_score": scores.x_mean,
            "champion_min_axis": scores.x_min,
            "challenger_score": scores.y_mean,
        }
    return signal


def shadow_candidates(store: Store, since: datetime, until: datetime) -> Candidates:
    """One candidate per shadow row with ``since <= ts < until`` (see the module docstring)."""
    found = Candidates()
    signals: dict[str, dict[str, Any]] = {}
    for row, record in store.shadow_judgments.iter_shadow_judgments(since):
        if row.ts < until:
            signals[row.id] = judge_signal(record)
    rows: list[ShadowRow] = []
    for row in store.shadow_rows.iter_shadow_rows(since=since):
        if row.ts >= until:
            break  # oldest first: the rest is later still
        found.counts.shadow_rows += 1
        if row.champion_answer.error is not None:
            found.counts.shadow_champion_failed += 1
            continue
        rows.append(row)
    feedback = store.shadow_feedback.shadow_feedback_for(row.request_id for row in rows)
    for row in rows:
        label = feedback.get(row.request_id)
        found.counts.shadow_judged += row.id in signals
        found.counts.shadow_with_feedback += label is not None
        found.items.append(
            Candidate(
                source="shadow",
                source_id=row.id,
                request_id=row.request_id,
                challenger=row.challenger,
                question=row.query,
                tags=dict(row.tags),
                champion_answer=row.champion_answer.text,
                champion_chunk_ids=list(row.champion_answer.chunk_ids),
                feedback=None if label is None else label.feedback,
                **signals.get(row.id, {}),
            )
        )
    return found


def _in_window(case: Case, since: datetime, until: datetime) -> bool:
    return case.ts is None or since <= case.ts < until


def replay_candidates(store: Store, since: datetime, until: datetime, redactor: Redactor) -> Candidates:
    """One candidate per labelled case in the window (see the module docstring)."""
    found = Candidates()
    cases = [case for case in store.cases.iter_cases() if _in_window(case, since, until)]
    rewrites = store.rewrites.get_rewrites([case.id for case in cases])
    for case in cases:
        found.counts.replay_cases += 1
        rewrite = rewrites.get(case.id)
        if rewrite is not None:
            question = rewrite.query
            found.counts.replay_rewritten += rewrite.rewritten
        elif case.history and is_follow_up(case.query):
            found.counts.replay_follow_ups_unpinned += 1
            continue
        else:
            question = case.query
        found.items.append(
            Candidate(
                source="replay",
                source_id=case.id,
                question=redactor(question),
                tags=dict(case.tags),
                champion_answer=redactor(case.old_answer),
                champion_chunk_ids=[chunk.id for chunk in case.retrieved],
                feedback=Feedback(case.feedback),
            )
        )
    return found


def merge(parts: Iterable[Candidates]) -> Candidates:
    """The candidates of several sources together, their counts added."""
    together = Candidates()
    for part in parts:
        together.items += part.items
        for name, value in part.counts.as_dict().items():
            setattr(together.counts, name, getattr(together.counts, name) + value)
    return together
