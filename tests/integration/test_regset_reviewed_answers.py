"""A reviewer who wrote the correct answer said the champion's answer was wrong: on SQLite and PostgreSQL, the
next regression set holds that question as an open wound even without a failure tag (issue 10)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ragreplay.core.regset import Stratum
from ragreplay.core.review import Review, taxonomy
from ragreplay.regset.build import TokenHashEmbedder, build_regset
from ragreplay.review.queues import build_regset_queue
from ragreplay.review.references import reviewed_references
from ragreplay.store import Store
from regset_data import seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)
SIZES: dict[Stratum, int] = {"win": 5, "contested": 5, "wound": 5}


def test_a_correct_answer_without_a_tag_makes_an_open_wound(store: Store) -> None:
    seed_shadow(store, NOW)
    first = build_regset(
        store, WEEK, NOW + timedelta(minutes=1), SIZES, sources=("shadow",), embed_with=TokenHashEmbedder()
    )
    queue = build_regset_queue(store, first.record.id, taxonomy([]), k=1)
    contested = next(i for i in store.reviews.load_items(queue.id) if i.source == "regset-contested")
    assert next(i for i in first.items if i.key == contested.key).stratum == "contested"
    store.reviews.add_reviewer("ann")
    store.reviews.save_review(
        queue.id,
        Review(
            reviewer="ann",
            item_key=contested.key,
            a_side="champion",
            choice="tie",
            correct_answer="Twenty-five days a year, thirty after ten years.",
        ),
    )
    references = reviewed_references(store)
    assert list(references.values()) == [("Twenty-five days a year, thirty after ten years.", None)]
    second = build_regset(
        store,
        WEEK,
        NOW + timedelta(minutes=1),
        {"win": 100, "contested": 100, "wound": 100},  # every question of the window: no draw decides
        sources=("shadow",),
        embed_with=TokenHashEmbedder(),
        references=references,
    )
    (key,) = references
    reviewed = [i for i in second.items if i.key == key]
    assert reviewed and reviewed[0].stratum == "wound", [(i.key, i.stratum) for i in reviewed]
    assert reviewed[0].candidate.failure_tag is None
