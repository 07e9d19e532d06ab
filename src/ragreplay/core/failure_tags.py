"""Failure tags as reports show them: how many reviewed items (and reviews) carry each failure tag, with the
reviews behind the figures and how many of those were simulated. Pure: the caller picks the reviews that
concern a run, a challenger or a gate.

A reviewer whose name starts with :data:`SIMULATED_PREFIX` is not a person: the offline demo's ground truth
stands in for reviewers under such names (``simulated-1``), and every figure drawn from them says so.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from pydantic import BaseModel, ConfigDict

from ragreplay.core.review import Review

SIMULATED_PREFIX = "simulated-"
"""The name prefix of reviewers that are not people (the demo's ground truth)."""


def is_simulated(reviewer: str) -> bool:
    """Whether ``reviewer`` is a simulated reviewer (its name starts with :data:`SIMULATED_PREFIX`)."""
    return reviewer.startswith(SIMULATED_PREFIX)


class FailureTagCount(BaseModel):
    """One failure tag: the reviewed items that carry it (once per item however many reviewers gave it) and
    the reviews that gave it."""

    model_config = ConfigDict(frozen=True)

    tag: str
    items: int
    reviews: int


class FailureTags(BaseModel):
    """The failure tags of the reviews that concern one run, challenger or gate: ``reviews`` of ``items``
    behind the figures (``simulated_reviews`` of them by simulated reviewers), the tags most frequent first.
    No reviews: ``reviews == 0`` ("no reviews yet")."""

    model_config = ConfigDict(frozen=True)

    reviews: int = 0
    items: int = 0
    simulated_reviews: int = 0
    tags: list[FailureTagCount] = []


def tally_failure_tags(reviews: Iterable[tuple[Hashable, Review]]) -> FailureTags:
    """Count the failure tags of ``(item id, review)`` pairs: per tag the distinct items and the reviews that
    gave it, sorted by items (then reviews) descending, then by tag."""
    items: set[Hashable] = set()
    n_reviews = simulated = 0
    tagged: dict[str, set[Hashable]] = {}
    given: dict[str, int] = {}
    for item, review in reviews:
        n_reviews += 1
        simulated += is_simulated(review.reviewer)
        items.add(item)
        for tag in review.failure_tags:
            tagged.setdefault(tag, set()).add(item)
            given[tag] = given.get(tag, 0) + 1
    counts = [FailureTagCount(tag=t, items=len(tagged[t]), reviews=given[t]) for t in tagged]
    counts.sort(key=lambda c: (-c.items, -c.reviews, c.tag))
    return FailureTags(reviews=n_reviews, items=len(items), simulated_reviews=simulated, tags=counts)
