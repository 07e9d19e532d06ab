"""The failure tags reviewers gave a run's cases, a shadow report's rows (per challenger) or a gate's questions,
matched through where each review item came from (its ``origin``) and, for a gate, its question.

- A replay run: items with origin ``case:ID`` for a case of the run, in a queue built from that run (a
  ``triage:RUN`` queue, or one whose recipe names the run as ``run``): a case reviewed for another run was
  reviewed on another run's answer.
- A shadow report: items with origin ``shadow:ROW`` for a row in the report, counted under that row's challenger.
- A gate: items whose question has the key of one of the gate's questions (any queue, any origin).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.failure_tags import FailureTags, is_simulated, tally_failure_tags
from ragreplay.core.regset import question_key
from ragreplay.core.review import Review, ReviewItem
from ragreplay.core.run_summary import RunSummary
from ragreplay.store import Store


def queue_run(recipe: dict[str, Any]) -> str | None:
    """The run a queue was built from: its recipe's ``run``, else the RUN of a ``triage:RUN`` source."""
    run = recipe.get("run")
    if isinstance(run, str):
        return run
    source = str(recipe.get("source", ""))
    return source.removeprefix("triage:") if source.startswith("triage:") else None


def reviewed(
    store: Store, wanted: Callable[[dict[str, Any]], bool]
) -> Iterator[tuple[str, ReviewItem, Review]]:
    """Every stored review with its queue id and item, for the queues whose recipe ``wanted`` accepts (items
    are read once per queue)."""
    recipes = {q.id: q.recipe for q in store.reviews.list_queues()}
    items: dict[str, dict[str, ReviewItem]] = {}
    for stored in store.reviews.load_reviews():
        recipe = recipes.get(stored.queue_id)
        if recipe is None or not wanted(recipe):
            continue
        if stored.queue_id not in items:
            items[stored.queue_id] = {i.key: i for i in store.reviews.load_items(stored.queue_id)}
        item = items[stored.queue_id].get(stored.review.item_key)
        if item is not None:
            yield stored.queue_id, item, stored.review


def run_failure_tags(store: Store, run_id: str, case_ids: Iterable[str]) -> FailureTags:
    """The failure tags of the reviews of run ``run_id``'s cases (``case_ids``) in queues built from it."""
    origins = {f"case:{c}" for c in case_ids}
    return tally_failure_tags(
        ((queue, item.key), review)
        for queue, item, review in reviewed(store, lambda r: queue_run(r) == run_id)
        if item.origin in origins
    )


def with_run_failure_tags(store: Store, summary: RunSummary) -> RunSummary:
    """``summary`` with the failure tags of its run's reviewed cases."""
    tags = run_failure_tags(store, summary.run.id, (c.case_id for c in summary.cases))
    return summary.model_copy(update={"failure_tags": tags})


def shadow_failure_tags(
    store: Store, summary: ComparisonSummary, start: datetime | None = None
) -> dict[str, FailureTags]:
    """Per challenger of a shadow report, the failure tags of the reviews of its rows in the report: the
    summary's rows, or (``start``: a summary from rollups, without rows) the judged rows with ``ts >= start``
    that reviewed items name."""
    found_items = list(reviewed(store, lambda _: True))
    if start is None:
        challenger_of = {f"shadow:{r.case_id}": r.challenger for r in summary.rows}
    else:
        ids = [
            item.origin.removeprefix("shadow:")
            for _, item, _ in found_items
            if item.origin.startswith("shadow:")
        ]
        challenger_of = {
            f"shadow:{row_id}": name
            for row_id, name in store.shadow_rollups.judged_challengers(ids, start).items()
        }
    by_challenger: dict[str, list[tuple[tuple[str, str], Review]]] = {s.name: [] for s in summary.challengers}
    for queue, item, review in found_items:
        name = challenger_of.get(item.origin)
        if name is not None:
            by_challenger.setdefault(name, []).append(((queue, item.key), review))
    return {name: tally_failure_tags(found) for name, found in by_challenger.items()}


def with_shadow_failure_tags(
    store: Store, summary: ComparisonSummary, start: datetime | None = None
) -> ComparisonSummary:
    """``summary`` (a shadow report) with the failure tags per challenger (see :func:`shadow_failure_tags`)."""
    return summary.model_copy(update={"failure_tags": shadow_failure_tags(store, summary, start)})


def question_failure_tags(store: Store, keys: Iterable[str]) -> FailureTags:
    """The failure tags of the reviews of any item asking one of the questions keyed ``keys`` (a gate's
    items), an item counted once per queue."""
    wanted = set(keys)
    return tally_failure_tags(
        ((queue, item.key), review)
        for queue, item, review in reviewed(store, lambda _: True)
        if item.key in wanted or question_key(item.question) in wanted
    )


def simulated_reviewers(store: Store) -> list[str]:
    """The simulated reviewers (not people: the demo's ground truth) behind any stored review, sorted."""
    return sorted(
        {s.review.reviewer for s in store.reviews.load_reviews() if is_simulated(s.review.reviewer)}
    )
