"""Judge versions side by side, pure: each version's agreement with reviewers, and old against new.

The decisions of every judge version on the human-labelled items come together in one mapping (version id ->
item key -> :class:`~ragreplay.core.review.JudgeDecision`): the decision kept on each item when its queue was
built, plus the items' re-judgments. :func:`per_version` calibrates each version on the items it judged;
:func:`side_by_side` compares one (new) version with each other (old) one on the same items: both versions
scored them and reviewers gave them a majority winner, so the two agreements are measured on the same labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragreplay.core.review import (
    Agreement,
    AlertPolicy,
    Calibration,
    JudgeDecision,
    Review,
    ReviewItem,
    agreement,
    calibrate,
    calibration_pairs,
    cohen_kappa,
)
from ragreplay.core.stats import Rate, rate

Decisions = dict[str, dict[str, JudgeDecision]]
"""Judge version id -> item key -> that version's decision on the item."""


def decisions_by_version(
    items: Mapping[str, ReviewItem], judged: Iterable[tuple[str, JudgeDecision]] = ()
) -> Decisions:
    """Every version's decisions: the one kept on each item, then ``judged`` (``(item key, decision)`` pairs
    of re-judgments; a re-judgment replaces a kept decision of the same version). Keys not in ``items`` are
    left out."""
    out: Decisions = {}
    for key, item in items.items():
        if item.judge is not None:
            out.setdefault(item.judge.version, {})[key] = item.judge
    for key, decision in judged:
        if key in items:
            out.setdefault(decision.version, {})[key] = decision
    return out


def label_of(decisions: Mapping[str, JudgeDecision]) -> str:
    """``judge@prompt_version`` of a version's decisions (they share it)."""
    first = next(iter(decisions.values()), None)
    return "-" if first is None else f"{first.judge}@{first.prompt_version}"


def with_decisions(
    items: Mapping[str, ReviewItem], decisions: Mapping[str, JudgeDecision]
) -> dict[str, ReviewItem]:
    """The items ``decisions`` covers, each carrying that decision as its judge's."""
    return {k: items[k].model_copy(update={"judge": d}) for k, d in decisions.items() if k in items}


def per_version(
    items: Mapping[str, ReviewItem],
    reviews: Sequence[Review],
    by_version: Decisions,
    policy: AlertPolicy | None = None,
) -> dict[str, Calibration]:
    """Each version's calibration on the items it judged, by version id."""
    return {v: calibrate(with_decisions(items, d), reviews, policy) for v, d in sorted(by_version.items())}


@dataclass(frozen=True)
class JudgeVsJudge:
    """Two judge versions on the same items: how often they name the same winner, and Cohen's kappa."""

    agreement: Rate
    kappa: float | None


@dataclass(frozen=True)
class SideBySide:
    """An old and a new judge version on the same labelled items: each one's agreement with reviewers (same
    labels, same n) and the two versions' agreement with each other."""

    old: str
    old_label: str
    new: str
    new_label: str
    old_vs_human: Agreement
    new_vs_human: Agreement
    old_vs_new: JudgeVsJudge

    @property
    def n(self) -> int:
        """The items both versions scored and reviewers labelled."""
        return self.new_vs_human.n


def side_by_side(
    items: Mapping[str, ReviewItem],
    reviews: Sequence[Review],
    by_version: Decisions,
    new: str,
    policy: AlertPolicy | None = None,
) -> list[SideBySide]:
    """``new`` against every other version in ``by_version``, each on the items both scored and reviewers
    gave a majority winner (items the reviewers split on, or either version could not score, are left out)."""
    policy = policy or AlertPolicy()
    new_decisions = by_version.get(new, {})
    new_pairs = {p.item_key: p for p in calibration_pairs(with_decisions(items, new_decisions), reviews)[0]}
    out = []
    for old, old_decisions in sorted(by_version.items()):
        if old == new:
            continue
        old_pairs = calibration_pairs(with_decisions(items, old_decisions), reviews)[0]
        shared = [(p, new_pairs[p.item_key]) for p in old_pairs if p.item_key in new_pairs]
        human = [p.human_winner for p, _ in shared]
        old_w, new_w = [p.judge_winner for p, _ in shared], [q.judge_winner for _, q in shared]
        same = sum(a == b for a, b in zip(old_w, new_w, strict=True))
        out.append(
            SideBySide(
                old=old,
                old_label=label_of(old_decisions),
                new=new,
                new_label=label_of(new_decisions),
                old_vs_human=agreement("old", old_w, human, policy, "overall"),
                new_vs_human=agreement("new", new_w, human, policy, "overall"),
                old_vs_new=JudgeVsJudge(rate(same, len(shared)), cohen_kappa(old_w, new_w)),
            )
        )
    return out
