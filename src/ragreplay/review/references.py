"""What reviewers wrote, flowing back: each reviewed question's correct answer and failure tag, by question key,
for the next regression set (a wound with a reference; a tagged question is a known failure) and the gate (a
wound is fixed when the challenger's answer fits the reference)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ragreplay.core.regset import question_key
from ragreplay.core.review import Review, ReviewItem
from ragreplay.store import Store


def reviewed_items(store: Store, since: datetime | None = None) -> Iterator[tuple[ReviewItem, Review]]:
    """Each review (submitted at or after ``since``) that wrote a correct answer or a failure tag, with the item
    it reviewed, oldest first. Reviews of items no longer stored are left out."""
    items: dict[tuple[str, str], ReviewItem | None] = {}
    for stored in store.reviews.load_reviews(since=since):
        review = stored.review
        if review.correct_answer is None and not review.failure_tags:
            continue
        where = (stored.queue_id, review.item_key)
        if where not in items:
            items[where] = store.reviews.get_item(*where)
        item = items[where]
        if item is not None:
            yield item, review


def reviewed_references(
    store: Store, since: datetime | None = None
) -> dict[str, tuple[str | None, str | None]]:
    """Question key -> (correct answer, first failure tag) from the reviews (submitted at or after ``since``);
    where several reviews of a question wrote one, the latest wins. Reviews that wrote neither are left out."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for item, review in reviewed_items(store, since):  # oldest first: later reviews overwrite
        key = question_key(item.question)
        answer, tag = found.get(key, (None, None))
        found[key] = (
            review.correct_answer or answer,
            review.failure_tags[0] if review.failure_tags else tag,
        )
    return found
