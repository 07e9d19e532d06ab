"""Comparisons kept in the store: what identifies one (so the same command resumes it), the JSON of its per-case
rows, and its summary rebuilt from those rows (so a report never needs a target or a judge again).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ragreplay.compare.grid import ComparisonSummary, build_summary
from ragreplay.core.compare_stats import CompareRow
from ragreplay.core.comparisons import ComparisonRecord, ComparisonRowRecord
from ragreplay.core.flat_tables import TableShape
from ragreplay.core.ids import content_hash
from ragreplay.core.runs import RunStatus
from ragreplay.errors import RagreplayError
from ragreplay.judges.position import OrderMode, PairOutcome
from ragreplay.ports import ComparisonStore, Judge, PairwiseJudge, Target


def new_comparison_id(now: datetime) -> str:
    """A sortable, unique comparison id such as ``cmp_20261129_184500_a1b2``."""
    return f"cmp_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}"


def comparison_config(
    *,
    champion: Target,
    challengers: Mapping[str, Target],
    pairwise: PairwiseJudge,
    fit_judge: Judge,
    judge_spec: str,
    fit_judge_spec: str,
    order: OrderMode,
    seed: int | None,
    cases_label: str,
) -> dict[str, Any]:
    """Everything that decides a comparison's rows, plus the label of its cases (JSON-ready)."""
    return {
        "champion": {"name": champion.name, "version": champion.version},
        "challengers": [
            {"name": name, "target": t.name, "version": t.version} for name, t in challengers.items()
        ],
        "judge": {"spec": judge_spec, "name": pairwise.name, "prompt_version": pairwise.prompt_version},
        "fit_judge": {
            "spec": fit_judge_spec,
            "name": fit_judge.name,
            "prompt_version": fit_judge.prompt_version,
        },
        "order": order,
        "seed": seed,
        "cases": cases_label,
    }


def config_hash(config: Mapping[str, Any]) -> str:
    """The hash that says "same comparison": the cases' label is left out (the dataset hash covers the cases)
    and so is the seed in ``both`` order mode, where it changes nothing."""
    identity = {k: v for k, v in config.items() if k != "cases"}
    if identity.get("order") != "random":
        identity["seed"] = None
    return content_hash(identity)


def dataset_hash(case_ids: Sequence[str]) -> str:
    """The hash of a set of cases, whatever their order."""
    return content_hash(sorted(set(case_ids)))


def plan_comparison(
    store: ComparisonStore, config: Mapping[str, Any], case_ids: Sequence[str], fresh: bool = False
) -> tuple[ComparisonRecord, bool]:
    """The comparison to fill: the newest one with the same configuration and cases (returned with ``True``;
    an unfinished one is set ``running`` again), or, with ``fresh`` or when there is none, a new one."""
    hashes = config_hash(config), dataset_hash(case_ids)
    if not fresh:
        found = store.comparisons.find_comparison(*hashes)
        if found is not None:
            if found.status != RunStatus.DONE:
                store.comparisons.set_comparison_status(found.id, RunStatus.RUNNING)
                found = found.model_copy(update={"status": RunStatus.RUNNING, "finished_at": None})
            return found, True
    now = datetime.now(UTC)
    record = ComparisonRecord(
        id=new_comparison_id(now),
        created_at=now,
        status=RunStatus.RUNNING,
        config=dict(config),
        config_hash=hashes[0],
        dataset_hash=hashes[1],
        n_cases=len(set(case_ids)),
    )
    store.comparisons.create_comparison(record)
    return record, False


def row_records(
    comparison_id: str,
    rows: Sequence[CompareRow],
    outcomes: Mapping[str, PairOutcome],
    generators: Mapping[str, str],
) -> list[ComparisonRowRecord]:
    """The stored form of one case's rows: the row, its pair outcome (for position statistics) and the models
    that wrote the two answers (for the same-family check)."""
    records = []
    for row in rows:
        outcome = outcomes.get(row.challenger)
        models = {
            side: generators[key]
            for side, key in (("champion", "champion"), ("challenger", row.challenger))
            if key in generators
        }
        payload = {
            "row": row.model_dump(mode="json"),
            "outcome": None if outcome is None else outcome.model_dump(mode="json"),
            "generators": models,
        }
        records.append(
            ComparisonRowRecord(
                comparison_id=comparison_id, case_id=row.case_id, challenger=row.challenger, payload=payload
            )
        )
    return records


def summary_from_store(store: ComparisonStore, record: ComparisonRecord) -> ComparisonSummary:
    """The report of a stored comparison, built from its stored rows only."""
    config = record.config
    rows: list[CompareRow] = []
    outcomes: dict[str, list[PairOutcome]] = {}
    generators: dict[str, str] = {}
    for stored in store.comparisons.load_comparison_rows(record.id):
        payload = stored.payload
        row = CompareRow.model_validate(payload["row"])
        rows.append(row)
        if payload.get("outcome") is not None:
            outcomes.setdefault(row.challenger, []).append(PairOutcome.model_validate(payload["outcome"]))
        models = payload.get("generators", {})
        if "champion" in models:
            generators.setdefault("champion", models["champion"])
        if "challenger" in models:
            generators.setdefault(row.challenger, models["challenger"])
    judge, fit_judge = config["judge"], config["fit_judge"]
    return build_summary(
        champion=config["champion"]["name"],
        challenger_names=[c["name"] for c in config["challengers"]],
        rows=rows,
        outcomes=outcomes,
        judge=judge["name"],
        judge_prompt_version=judge["prompt_version"],
        fit_judge=fit_judge["name"],
        order=config["order"],
        cases=config["cases"],
        n_cases=record.n_cases,
        generators=generators,
        seed=config.get("seed"),
        comparison_id=record.id,
        judge_specs=[judge["spec"], fit_judge["spec"]],
    )


def find_comparison(store: ComparisonStore, ref: str) -> ComparisonRecord:
    """The stored comparison ``ref`` names (an id or a unique prefix of one), or an error with the fix."""
    record = store.comparisons.get_comparison(ref)
    if record is None:
        raise RagreplayError(f"no comparison matches {ref!r}. Fix: pick an id from `ragreplay comparisons`.")
    return record


def show_comparison(store: ComparisonStore, ref: str) -> ComparisonSummary:
    """The report of the stored comparison ``ref`` (an id or a unique prefix of one)."""
    return summary_from_store(store, find_comparison(store, ref))


def comparison_rows(store: ComparisonStore, record: ComparisonRecord) -> Iterator[dict[str, Any]]:
    """The comparison's stored rows flat, one per (case, challenger), columns :data:`COMPARISON_TABLE`: the
    row's fields with its tags as JSON text."""
    for stored in store.comparisons.load_comparison_rows(record.id):
        row = CompareRow.model_validate(stored.payload["row"]).model_dump(mode="json")
        row["tags"] = json.dumps(row["tags"], ensure_ascii=False, sort_keys=True)
        yield {"comparison_id": record.id, **row}


COMPARISON_TABLE = TableShape(
    columns=("comparison_id", *CompareRow.model_fields),
    kinds={
        "consistent": "bool",
        "champion_latency_ms": "float",
        "challenger_latency_ms": "float",
        "champion_cost_usd": "float",
        "challenger_cost_usd": "float",
        "champion_unpriced_calls": "int",
        "challenger_unpriced_calls": "int",
        "champion_wrong_language": "bool",
        "challenger_wrong_language": "bool",
    },
)
"""The columns of :func:`comparison_rows`, in order, and their kinds."""
