"""What reviewers wrote, flowing back: each reviewed question's correct answer and failure tag, by question key,
for the next regression set (a wound with a reference; a tagged question is a known failure) and the gate (a
wound is fixed when the challenger's answer fits the reference)."""

from __future__ import annotations

from datetime import datetime

from ragreplay.core.regset import question_key
from ragreplay.store import Store


def reviewed_references(
    store: Store, since: datetime | None = None
) -> dict[str, tuple[str | None, str | None]]:
    """Question key -> (correct answer, first failure tag) from the reviews (submitted at or after ``since``);
    where several reviews of a question wrote one, the latest wins. Reviews that wrote neither are left out."""
    found: dict[str, tuple[str | None, str | None]] = {}
    questions: dict[tuple[str, str], str | None] = {}
    for stored in store.reviews.load_reviews(since=since):  # oldest first: later reviews overwrite
        review = stored.review
        if review.correct_answer is None and not review.failure_tags:
            continue
        where = (stored.queue_id, review.item_key)
        if where not in questions:
            item = store.reviews.get_item(*where)
            questions[where] = None if item is None else item.question
        question = questions[where]
        if question is None:
            continue
        key = question_key(question)
        answer, tag = found.get(key, (None, None))
        found[key] = (
            review.correct_answer or answer,
            review.failure_tags[0] if review.failure_tags else tag,
        )
    return found
