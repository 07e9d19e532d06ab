"""Agreement between reviewers on one queue, as a reviewer may see it: only over the items they have reviewed.

A reviewer who saw how others labelled an item before labelling it would no longer label it blind, so the screen
computes Krippendorff's alpha and each pair's Cohen's kappa over the viewer's own reviewed items only; under
``min_overlap`` shared items a figure is "not enough overlap yet".
"""

from __future__ import annotations

from dataclasses import dataclass

from ragreplay.core.review import InterAnnotator, inter_annotator
from ragreplay.store import Store

DEFAULT_MIN_OVERLAP = 10
"""Shared items under which an agreement figure is not shown: kappa on fewer swings too much to read."""


@dataclass(frozen=True)
class QueueAgreement:
    """Reviewers against each other on a queue's items the viewer reviewed (``reviewed`` of them)."""

    queue_id: str
    viewer: str | None
    reviewed: int
    figures: InterAnnotator
    min_overlap: int

    @property
    def enough(self) -> bool:
        """Whether the overall figure (alpha over items with two reviews or more) has enough items."""
        return self.figures.items >= self.min_overlap


def queue_agreement(
    store: Store, queue_id: str, viewer: str | None, min_overlap: int = DEFAULT_MIN_OVERLAP
) -> QueueAgreement:
    """The agreement between reviewers of ``queue_id`` over the items ``viewer`` has reviewed (every item when
    ``viewer`` is ``None``: the operator's view)."""
    stored = [s.review for s in store.reviews.load_reviews(queue_id)]
    if viewer is not None:
        mine = {r.item_key for r in stored if r.reviewer == viewer}
        stored = [r for r in stored if r.item_key in mine]
        reviewed = len(mine)
    else:
        reviewed = len({r.item_key for r in stored})
    return QueueAgreement(queue_id, viewer, reviewed, inter_annotator(stored), min_overlap)
