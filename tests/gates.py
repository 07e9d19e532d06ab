"""Shared by the gate tests: a stored regression set whose answers the fake targets and judge decide."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ragreplay.core.regset import Candidate, RegressionSetRecord, SetItem, Stratum
from ragreplay.store import Store

GOOD = "good"  # the answer repeats the question: full support, scores 5/4/4/4 when it wins
BAD = "bad"  # the answer is "zzz": no support, scores 1/2/2/2 when it loses


def question(stratum: str, i: int) -> str:
    return f"what is the {stratum} policy number {i} for holidays"


def make_set(
    store_url: str, plan: dict[Stratum, list[tuple[str, str]]], references: Mapping[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """A regression set with one item per (champion, challenger) answer pair, a reviewer's correct answer on
    the questions ``references`` names; returns both targets' answers."""
    answers: dict[str, dict[str, str]] = {"champion": {}, "challenger": {}}
    items: list[SetItem] = []
    for stratum, pairs in plan.items():
        for i, (champion, challenger) in enumerate(pairs):
            q = question(stratum, i)
            answers["champion"][q] = q if champion == GOOD else "zzz"
            answers["challenger"][q] = q if challenger == GOOD else "zzz"
            reference = (references or {}).get(q)
            c = Candidate(source="shadow", source_id=f"{stratum}{i}", question=q, reference_answer=reference)
            items.append(
                SetItem(
                    key=c.key,
                    stratum=stratum,
                    candidate=c,
                    cluster=i,
                    inclusion_probability=1.0,
                    count=1,
                    weight=1.0,
                )
            )
    counts = {s: sum(1 for i in items if i.stratum == s) for s in ("win", "contested", "wound")}
    record = RegressionSetRecord(id="rs_test_v1", version=1, created_at=datetime.now(UTC), counts=counts)
    with Store.open(store_url) as store:
        store.regsets.create_set(record, items)
    return answers


def targets(tmp_path: Path, answers: dict[str, dict[str, str]]) -> tuple[Path, Path]:
    paths = []
    for name in ("champion", "challenger"):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, "target": {"kind": "fake", "answers": answers[name]}}))
        paths.append(path)
    return paths[0], paths[1]


PASSING: dict[Stratum, list[tuple[str, str]]] = {
    "win": [(GOOD, GOOD)] * 5,  # ties: nothing lost
    "contested": [(BAD, GOOD)] * 10,  # the challenger wins 10 of 10: interval above 55%
    "wound": [(BAD, GOOD)] * 6,  # challenger scores 4.25: fixed
}
