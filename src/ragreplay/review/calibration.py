"""Calibration from the store: the reviews of calibration queues against the judge decisions kept on their
items, and the agreement between reviewers where items overlap."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ragreplay.core.failure_tags import is_simulated
from ragreplay.core.review import (
    AlertPolicy,
    Calibration,
    InterAnnotator,
    Review,
    ReviewItem,
    calibrate,
    inter_annotator,
)
from ragreplay.store import Store


@dataclass(frozen=True)
class Labelled:
    """The reviewed items and their reviews, both keyed ``queue_id/key`` (so one row in two weekly samples is
    two items), and the queues they come from."""

    items: dict[str, ReviewItem]
    reviews: list[Review]
    queues: list[str]
    locations: dict[str, tuple[str, str]]
    """``queue_id/key`` -> ``(queue_id, key)``."""


def labelled_items(store: Store, since: datetime | None = None) -> Labelled:
    """Every item reviewed (by a review submitted since ``since``), with those reviews."""
    stored = store.reviews.load_reviews(since=since)
    queue_ids = sorted({s.queue_id for s in stored})
    reviewed = {(s.queue_id, s.review.item_key) for s in stored}
    items: dict[str, ReviewItem] = {}
    locations: dict[str, tuple[str, str]] = {}
    for queue_id in queue_ids:
        for item in store.reviews.load_items(queue_id):
            if (queue_id, item.key) in reviewed:
                items[f"{queue_id}/{item.key}"] = item
                locations[f"{queue_id}/{item.key}"] = (queue_id, item.key)
    reviews: list[Review] = [
        s.review.model_copy(update={"item_key": f"{s.queue_id}/{s.review.item_key}"}) for s in stored
    ]
    return Labelled(items, reviews, queue_ids, locations)


@dataclass(frozen=True)
class CalibrationReport:
    """The judge-vs-human figures, reviewer agreement, and the queues and reviews behind them."""

    calibration: Calibration
    reviewers: InterAnnotator
    queues: list[str]
    reviews: int
    since: datetime | None
    simulated_reviews: int = 0
    """Reviews by simulated reviewers (the demo's ground truth standing in for people)."""


def calibration_report(
    store: Store, since: datetime | None = None, policy: AlertPolicy | None = None
) -> CalibrationReport:
    """Calibrate on every review (submitted since ``since``) of an item that carries a judge decision, in any
    queue (calibration queues first of all, but a regression set item's stored judgment counts too). An item
    is keyed by its queue and key, so the same row in two weekly samples counts twice only if reviewed twice."""
    found = labelled_items(store, since)
    return CalibrationReport(
        calibration=calibrate(found.items, found.reviews, policy),
        reviewers=inter_annotator(found.reviews),
        queues=found.queues,
        reviews=len(found.reviews),
        since=since,
        simulated_reviews=sum(is_simulated(r.reviewer) for r in found.reviews),
    )
