"""`ragreplay eval-diff`: two stored eval runs compared row by row (:mod:`ragreplay.core.eval_diff`); no model is
called. Unknown ids and runs that share no row are mistakes to fix, named with the fix."""

from __future__ import annotations

from dataclasses import dataclass

from ragreplay.core.eval_diff import RowsDiff, diff_rows
from ragreplay.errors import ConfigError
from ragreplay.evaluation.identity import metric_order
from ragreplay.evaluation.run import stored_rows
from ragreplay.store import Store
from ragreplay.store.evals import EvalRunRecord


@dataclass(frozen=True)
class EvalDiff:
    """Run B against run A: both records and the row-by-row figures."""

    run_a: EvalRunRecord
    run_b: EvalRunRecord
    rows: RowsDiff


def _run(store: Store, eval_id: str, side: str) -> EvalRunRecord:
    record = store.evals.get_eval(eval_id)
    if record is None:
        raise ConfigError(
            f"RUN_{side} {eval_id!r}: no eval run with this id in {store.url}. "
            "Fix: pick an id (or a unique prefix of one) from `ragreplay evals`"
        )
    return record


def diff_runs(store: Store, id_a: str, id_b: str, seed: int = 0) -> EvalDiff:
    """B minus A for every metric both eval runs scored, on the rows both have (see the module docstring)."""
    run_a, run_b = _run(store, id_a, "A"), _run(store, id_b, "B")
    rows_a, rows_b = stored_rows(store, run_a.id), stored_rows(store, run_b.id)
    shared = {r.row_id for r in rows_a} & {r.row_id for r in rows_b}
    if not shared:
        raise ConfigError(
            f"eval runs {run_a.id} and {run_b.id} share no row id ({len(rows_a)} and {len(rows_b)} rows): "
            "rows are paired by their dataset id. Fix: compare two runs over the same dataset rows"
        )
    order = list(dict.fromkeys([*metric_order(run_a), *metric_order(run_b)]))
    return EvalDiff(run_a=run_a, run_b=run_b, rows=diff_rows(rows_a, rows_b, order, seed))
