"""A gate is evaluated from the items its job saved, without reading them back (issue 10's benchmark): on SQLite
and PostgreSQL the report is the one the stored items give (a resumed gate reads them all back: the SIGKILL test
of tests/e2e/test_gate_cli.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gates import PASSING, make_set, targets
from ragreplay.core.gate import GatePolicy
from ragreplay.gate.run import GateReport, gate_target_files, stored_report
from ragreplay.settings import Settings
from ragreplay.store import Store


def run(store: Store, champion: Path, challenger: Path, fresh: bool = False) -> GateReport:
    return asyncio.run(
        gate_target_files(
            store=store,
            settings=Settings(db=store.url),
            set_ref="latest",
            champion=champion,
            challenger=challenger,
            judge_spec="fake:default",
            policy=GatePolicy(),
            fresh=fresh,
            env={},
        )
    )


def test_the_report_from_the_jobs_items_is_the_stored_one(tmp_path: Path, store: Store) -> None:
    champion, challenger = targets(tmp_path, make_set(store.url, PASSING))
    report = run(store, champion, challenger)
    again = stored_report(store, report.gate.id)
    assert report.gate == again.gate and report.gate.status == "done" and report.gate.finished_at is not None
    assert report.outcomes == again.outcomes and len(report.outcomes) == 21
    assert report.payloads == again.payloads
    assert list(report.payloads) == list(again.payloads)  # the store's order: stratum, then key
    assert report.verdict == again.verdict and report.verdict.decision == "pass"
    assert report.cost_usd == again.cost_usd and report.regset == again.regset
