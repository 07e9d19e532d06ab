"""Reviews as JSONL, for teams that label in another tool: one review per line,
``{"queue": QUEUE_ID, "review": {...}}``. An import is checked line by line (file, line and field named) and
writes nothing unless every line is good."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragreplay.core.review import Review, Taxonomy
from ragreplay.errors import InputError, InputProblem, RagreplayError
from ragreplay.store import Store
from ragreplay.store.reviews import StoredReview

MAX_PROBLEMS = 20


def export_lines(store: Store, queue_id: str) -> Iterator[str]:
    """The reviews of ``queue_id`` as JSONL lines (no newline), oldest first."""
    for stored in store.reviews.load_reviews(queue_id):
        yield json.dumps(
            {"queue": stored.queue_id, "review": stored.review.model_dump(mode="json")}, ensure_ascii=False
        )


def export_reviews(store: Store, queue_ref: str, path: Path) -> int:
    """Write the reviews of queue ``queue_ref`` to ``path``; returns how many."""
    queue = store.reviews.get_queue(queue_ref)
    if queue is None:
        raise RagreplayError(
            f"no review queue matches {queue_ref!r}. Fix: pick one from `ragreplay review queues`."
        )
    lines = list(export_lines(store, queue.id))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in ("review", *loc))


def read_reviews(store: Store, path: Path, taxonomy: Taxonomy) -> list[StoredReview]:
    """Every review of ``path``, checked: valid JSON, a known queue, a review that validates, an item of that
    queue, failure tags of the taxonomy. :class:`InputError` names each bad line (the first 20)."""
    problems: list[InputProblem] = []
    good: list[StoredReview] = []
    file = str(path)
    items_of: dict[str, set[str]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RagreplayError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        found = _check_line(store, file, number, line, taxonomy, items_of)
        if isinstance(found, StoredReview):
            good.append(found)
        else:
            problems += found
    if problems:
        raise InputError(problems[:MAX_PROBLEMS], more=max(0, len(problems) - MAX_PROBLEMS))
    return good


def _check_line(
    store: Store, file: str, number: int, line: str, taxonomy: Taxonomy, items_of: dict[str, set[str]]
) -> StoredReview | list[InputProblem]:
    def problem(field: str | None, message: str, fix: str = "") -> list[InputProblem]:
        return [InputProblem(file, number, field, message, fix)]

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return problem(None, f"not JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(obj, dict):
        return problem(None, "a line must be a JSON object with 'queue' and 'review'")
    queue_id = obj.get("queue")
    if not isinstance(queue_id, str) or not queue_id:
        return problem("queue", "missing or not a string", "give the queue id the reviews belong to")
    if queue_id not in items_of:
        queue = store.reviews.get_queue(queue_id)
        if queue is None or queue.id != queue_id:
            return problem(
                "queue", f"no review queue {queue_id!r} in the store", "see `ragreplay review queues`"
            )
        items_of[queue_id] = {i.key for i in store.reviews.load_items(queue_id)}
    try:
        review = Review.model_validate(obj.get("review"))
    except ValidationError as exc:
        return [InputProblem(file, number, _field(e["loc"]), e["msg"]) for e in exc.errors()]
    if review.item_key not in items_of[queue_id]:
        return problem("review.item_key", f"queue {queue_id} has no item {review.item_key!r}")
    unknown = taxonomy.check(review.failure_tags)
    if unknown:
        return problem(
            "review.failure_tags",
            f"unknown failure tag {unknown[0]!r}",
            f"use one of {', '.join(taxonomy.tags)} or add it under failure_tags: in ragreplay.yaml",
        )
    return StoredReview(queue_id, review)


def import_reviews(store: Store, path: Path, taxonomy: Taxonomy) -> int:
    """Check every line of ``path``, then save all its reviews in one transaction; returns how many."""
    reviews = read_reviews(store, path, taxonomy)
    store.reviews.save_reviews(reviews)
    return len(reviews)
