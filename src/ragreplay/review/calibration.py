"""Calibration from the store: the reviews of calibration queues against the judge decisions kept on their
items, and the agreement between reviewers where items overlap."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
class CalibrationReport:
    """The judge-vs-human figures, reviewer agreement, and the queues and reviews behind them."""

    calibration: Calibration
    reviewers: InterAnnotator
    queues: list[str]
    reviews: int
    since: datetime | None


def calibration_report(
    store: Store, since: datetime | None = None, policy: AlertPolicy | None = None
) -> CalibrationReport:
    """Calibrate on every review (submitted since ``since``) of an item that carries a judge decision, in any
    queue (calibration queues first of all, but a regression set item's stored judgment counts too). An item
    is keyed by its queue and key, so the same row in two weekly samples counts twice only if reviewed twice."""
    stored = store.reviews.load_reviews(since=since)
    queue_ids = sorted({s.queue_id for s in stored})
    items: dict[str, ReviewItem] = {}
    for queue_id in queue_ids:
        for item in store.reviews.load_items(queue_id):
            items[f"{queue_id}/{item.key}"] = item
    reviews: list[Review] = [
        s.review.model_copy(update={"item_key": f"{s.queue_id}/{s.review.item_key}"}) for s in stored
    ]
    return CalibrationReport(
        calibration=calibrate(items, reviews, policy),
        reviewers=inter_annotator(reviews),
        queues=queue_ids,
        reviews=len(reviews),
        since=since,
    )
