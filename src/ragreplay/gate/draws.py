"""More questions for an undecided bar, from the same strata of the same window (``--until-decided``).

The set's recipe says which window and sources it was built from; re-reading them gives the pool again. The
questions of a stratum not in the set (nor already in the gate) are drawn in a random order seeded by the set
and the stratum, so a resumed or repeated gate draws the same ones. A set that was imported, not built, has
no window to draw from.
"""

from __future__ import annotations

import random
from collections.abc import Collection

from ragreplay.core.regset import RegressionSetRecord, SetItem, Stratum, pool
from ragreplay.regset.build import BuildRecipe, read_candidates
from ragreplay.store import Store


def reserve(
    store: Store, regset: RegressionSetRecord, exclude: Collection[str]
) -> dict[Stratum, list[SetItem]]:
    """The pool's questions outside ``exclude``, per stratum, in the seeded order they are drawn in; empty
    when the set has no build recipe."""
    data = {k: v for k, v in regset.recipe.items() if k != "found"}
    if data.get("kind", "build") != "build" or "since" not in data:
        return {}
    recipe = BuildRecipe.model_validate(data)
    found = read_candidates(store, recipe)
    dropped = frozenset(k for k, a in recipe.overrides.items() if a == "drop")
    pooled = pool(found.items, recipe.margin, dropped=dropped, graduated=frozenset(recipe.graduated))
    left = [p for p in pooled if p.candidate.key not in exclude]
    drawn: dict[Stratum, list[SetItem]] = {}
    for stratum in ("win", "contested", "wound"):
        members = sorted((p for p in left if p.stratum == stratum), key=lambda p: p.candidate.key)
        random.Random(f"{regset.id}:{stratum}").shuffle(members)
        drawn[stratum] = [
            SetItem(
                key=p.candidate.key,
                stratum=stratum,
                candidate=p.candidate,
                cluster=-1,
                inclusion_probability=1.0,
                count=p.count,
                weight=float(p.count),
            )
            for p in members
        ]
    return drawn
