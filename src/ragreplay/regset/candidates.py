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

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragreplay.core.regset import Candidate, JudgeWinner
from ragreplay.core.shadow import ShadowJudgmentRecord
from ragreplay.core.types import Case, Feedback, Fit
from ragreplay.judges.position import PairOutcome, side_scores
from ragreplay.replay.rewrite import is_follow_up
from ragreplay.shadow.privacy import Redactor
from ragreplay.store import Store
from ragreplay.store.shadow_window import WindowRow

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
    found.items = list(iter_shadow_candidates(store, since, until, found.counts))
    return found


def iter_shadow_candidates(
    store: Store, since: datetime, until: datetime, counts: CandidateCounts
) -> Iterator[Candidate]:
    """:func:`shadow_candidates` streamed: one lean pass over the window (judgment and feedback joined in the
    store), counting into ``counts`` as it goes; memory stays flat."""
    for row in store.shadow_window.iter_window(since, until):
        counts.shadow_rows += 1
        champion = json.loads(row.champion_answer)
        if champion.get("error") is not None:
            counts.shadow_champion_failed += 1
            continue
        counts.shadow_judged += row.judged
        counts.shadow_with_feedback += row.feedback is not None
        yield window_candidate(row, champion)


def window_candidate(row: WindowRow, champion: dict[str, Any] | None = None) -> Candidate:
    """The candidate of one window row (``champion``: its champion answer, parsed already)."""
    champion = json.loads(row.champion_answer) if champion is None else champion
    return Candidate(
        source="shadow",
        source_id=row.id,
        request_id=row.request_id,
        challenger=row.challenger,
        question=row.query,
        tags=json.loads(row.tags),
        champion_answer=champion.get("text") or "",
        champion_chunk_ids=list(champion.get("chunk_ids") or []),
        feedback=None if row.feedback is None else Feedback(row.feedback),
        **_window_signal(row),
    )


def _window_signal(row: WindowRow) -> dict[str, Any]:
    """:func:`judge_signal` from a window row's columns, the payload's scores read as JSON (no model built)."""
    if not row.judged or row.error is not None:
        return {}
    signal: dict[str, Any] = {
        "agreement": None if row.fit is None else Fit(row.fit),
        "judge_winner": None if row.winner is None else _WINNERS[row.winner],
        "consistent": row.consistent,
    }
    outcome = json.loads(row.payload or "{}").get("outcome")
    if outcome is not None:
        x_mean, x_min, y_mean = outcome_scores(outcome)
        signal |= {"champion_score": x_mean, "champion_min_axis": x_min, "challenger_score": y_mean}
    return signal


def outcome_scores(outcome: dict[str, Any]) -> tuple[float | None, int | None, float | None]:
    """``(x mean, x lowest axis, y mean)`` of a stored pair outcome's JSON, as
    :func:`~ragreplay.judges.position.side_scores` computes them from the model (same order of sums)."""
    x_axes: list[list[int]] = []
    y_axes: list[list[int]] = []
    for ordering, judgment in outcome.get("judgments") or []:
        first, second = judgment.get("scores_a"), judgment.get("scores_b")
        x_scores, y_scores = (first, second) if ordering == "xy" else (second, first)
        for scores, into in ((x_scores, x_axes), (y_scores, y_axes)):
            values = [v for v in (scores or {}).values() if v is not None]
            if values:
                into.append(values)

    def mean(axes: list[list[int]]) -> float | None:
        return sum(sum(v) / len(v) for v in axes) / len(axes) if axes else None

    return mean(x_axes), min(min(v) for v in x_axes) if x_axes else None, mean(y_axes)


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
