"""Which cases a comparison replays: an ingested source, a run's cases, or a log file ingested on the fly."""

from __future__ import annotations

from pathlib import Path

from ragreplay.core.types import Case
from ragreplay.errors import RagreplayError
from ragreplay.ingest import ingest_file
from ragreplay.store import Store


def resolve_cases(store: Store, source: str, limit: int | None = None) -> tuple[list[Case], str]:
    """The cases named by ``source`` and a label for reports.

    ``source`` is a path to a log file (ingested into the store first; a re-ingest is a no-op), an ingested
    source id or unique prefix, or a run id or prefix (that run's cases). Cases keep the store's order.
    """
    path = Path(source)
    if path.is_file():
        summary = ingest_file(path, store)
        cases = list(store.cases.iter_cases(source_ids=[summary.source_id]))
        label = f"{path.name} (source {summary.source_id})"
    elif (found := store.cases.get_source(source)) is not None:
        cases = list(store.cases.iter_cases(source_ids=[found.id]))
        label = f"source {found.id} ({Path(found.path).name})"
    elif (run := store.runs.get_run(source)) is not None:
        case_ids = [r.case_id for r in store.runs.load_results(run.id)]
        by_id = store.cases.get_cases(case_ids)
        cases = [by_id[i] for i in case_ids if i in by_id]
        label = f"cases of run {run.id}"
    else:
        raise RagreplayError(
            f"--cases {source!r} is not a file, an ingested source nor a run. Fix: pass a log file, or an id "
            "from `ragreplay sources` or `ragreplay runs`."
        )
    if limit is not None:
        cases = cases[:limit]
    if not cases:
        raise RagreplayError(
            f"--cases {source!r} holds no labelled cases. Fix: ingest a log with GOOD/BAD feedback first."
        )
    return cases, label


def questions_for(store: Store, cases: list[Case]) -> dict[str, str]:
    """Each case's question: its pinned standalone rewrite when one exists, else the query as asked."""
    rewrites = store.rewrites.get_rewrites([c.id for c in cases])
    return {c.id: rewrites[c.id].query if c.id in rewrites else c.query for c in cases}
