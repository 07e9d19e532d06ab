"""The queries a retriever diff replays, with the chunk ids logged for them when there are any.

- An ingested source (id or unique prefix) or a run (its cases): each case's question, its pinned standalone
  rewrite where there is one, with the chunk ids logged with the answer (``retrieved``; none logged for a
  case is an empty list: production retrieved nothing) and its tags (so a target's ``{tags.X}`` filters
  apply).
- An eval dataset (``.jsonl``, docs/eval.md): each row's question, its ``retrieved`` ids (or its contexts' ids)
  and its ``key=value`` tags.
- Any other file: plain text, one question per line, no logged ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragreplay.compare.cases import questions_for, resolve_cases
from ragreplay.core.eval import EvalRow
from ragreplay.core.shadow import live_case
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.ingest.eval_dataset import read_eval_dataset
from ragreplay.ingest.query_lines import read_query_lines
from ragreplay.store import Store


@dataclass(frozen=True)
class DiffQuery:
    """One query to rank: its id, the question sent, the chunk ids logged for it (``None``: none were) and
    the case a target is given."""

    id: str
    question: str
    logged: tuple[str, ...] | None
    case: Case


def _tags(labels: tuple[str, ...]) -> dict[str, str]:
    return dict(label.split("=", 1) for label in labels if "=" in label)


def _from_row(row: EvalRow) -> DiffQuery:
    ranking = row.ranking()
    case = live_case(row.id, row.question, None, _tags(row.tags), case_id=row.id)
    return DiffQuery(row.id, row.question, ranking if ranking else None, case)


def queries_from_file(path: Path) -> tuple[list[DiffQuery], str]:
    """The queries of an eval dataset (``.jsonl``) or a plain text file, and a label for reports."""
    if path.suffix.lower() == ".jsonl":
        return [_from_row(r) for r in read_eval_dataset(path)], f"{path.name} (eval dataset)"
    queries = [
        DiffQuery(f"line{n}", text, None, live_case(f"line{n}", text, None, None, case_id=f"line{n}"))
        for n, text in read_query_lines(path)
    ]
    return queries, f"{path.name} (questions)"


def queries_from_store(store: Store, source: str) -> tuple[list[DiffQuery], str]:
    """The cases of an ingested source or a run, asked as their pinned standalone rewrites where pinned."""
    if store.cases.get_source(source) is None and store.runs.get_run(source) is None:
        raise ConfigError(
            f"--queries {source!r} is not a file, an ingested source nor a run in {store.url}. Fix: pass a "
            "dataset (.jsonl) or a text file of questions, or an id from `ragreplay sources` or `ragreplay runs`"
        )
    cases, label = resolve_cases(store, source)
    questions = questions_for(store, cases)
    queries = [DiffQuery(c.id, questions[c.id], tuple(r.id for r in c.retrieved), c) for c in cases]
    return queries, label
