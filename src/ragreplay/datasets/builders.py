"""Golden rows built from what the store already knows: reviewed questions with the reviewer's correct answer,
and the items of a regression set version.

From reviews, each question a reviewer wrote a correct answer for becomes a row whose reference is that answer
(the latest review's, when several did), with the conversation's earlier turns as its history. From a regression
set, every item becomes a row: a wound or contested item's reference is a reviewer's answer when there is one
(none otherwise), a win's is a reviewer's answer, else the champion's answer the user liked; the tag
``reference=reviewer|champion|none`` says which.
"""

from __future__ import annotations

from ragreplay.core.golden import GoldenRow
from ragreplay.core.regset import RegressionSetRecord, SetItem, question_key
from ragreplay.core.review import HistoryTurn, ReviewItem
from ragreplay.errors import ConfigError
from ragreplay.review.references import reviewed_items, reviewed_references
from ragreplay.store import Store

_TURN_ROLES = ("human", "ai")


def _history(item: ReviewItem) -> tuple[HistoryTurn, ...]:
    return tuple(t for t in item.history if t.role in _TURN_ROLES)


def rows_from_reviews(store: Store) -> list[GoldenRow]:
    """One row per reviewed question with a correct answer, in the order the questions were first reviewed."""
    rows: dict[str, GoldenRow] = {}
    for item, review in reviewed_items(store):  # oldest first: a later answer replaces an earlier one
        if review.correct_answer is None:
            continue
        key = question_key(item.question)
        tags = [f"{k}={v}" for k, v in sorted(item.tags.items())]
        tags += ["source=review", f"reviewer={review.reviewer}"]
        tags += [f"failure={t}" for t in review.failure_tags]
        rows[key] = GoldenRow(
            id=key,
            question=item.question,
            reference=review.correct_answer,
            tags=tuple(tags),
            history=_history(item),
        )
    return list(rows.values())


def _regset_row(item: SetItem, reviewed: str | None) -> GoldenRow:
    c = item.candidate
    reference, origin = reviewed or c.reference_answer, "reviewer"
    if reference is None and item.stratum == "win" and c.champion_answer.strip():
        reference, origin = c.champion_answer, "champion"
    tags = [f"{k}={v}" for k, v in sorted(c.tags.items())]
    tags += ["source=regset", f"stratum={item.stratum}", f"reference={origin if reference else 'none'}"]
    return GoldenRow(id=item.key, question=c.question, reference=reference, tags=tuple(tags))


def rows_from_regset(store: Store, ref: str) -> tuple[RegressionSetRecord, list[GoldenRow]]:
    """The regression set version ``ref`` (``latest``, ``vN`` or an id) and one row per item."""
    record = store.regsets.get_set(ref)
    if record is None:
        raise ConfigError(
            f"no regression set {ref!r} in {store.url}. Fix: pick one from `ragreplay regset list` (latest, v3...)"
        )
    answers = {key: answer for key, (answer, _) in reviewed_references(store).items() if answer}
    return record, [_regset_row(item, answers.get(item.key)) for item in store.regsets.load_items(record.id)]
