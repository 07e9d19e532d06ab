"""The pytest plugin (entry point ``ragreplay``): inert unless a test asks for it.

Installing ragreplay adds no hook that runs on its own: no autouse fixture, no collection change. A test that
wants a gate takes the ``ragreplay_gate`` fixture (or calls :func:`assert_gate_passes` itself)::

    def test_challenger_may_ship(ragreplay_gate):
        report = ragreplay_gate(champion="prod.yaml", challenger="new.yaml", judge="openai:gpt-4.1")
        assert_gate_passes(report)   # fails with the bars and the cases to look at; inconclusive skips

``--ragreplay-db`` (or the ini option ``ragreplay_db``) names the store; the default is ``ragreplay.db``.
Replay rates are checked with :func:`assert_replay_rates`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the plugin imports nothing heavy until a test uses it
    from ragreplay.gate.run import GateReport

DEFAULT_DB = "ragreplay.db"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--ragreplay-db`` and the ini option ``ragreplay_db``."""
    group = parser.getgroup("ragreplay")
    group.addoption(
        "--ragreplay-db", default=None, help="ragreplay store URL or SQLite path for gate fixtures"
    )
    parser.addini("ragreplay_db", "ragreplay store URL or SQLite path for gate fixtures", default=DEFAULT_DB)


def store_url(config: pytest.Config) -> str:
    """The store the fixtures use: the command line option, else the ini option."""
    return str(config.getoption("--ragreplay-db") or config.getini("ragreplay_db"))


@pytest.fixture
def ragreplay_gate(request: pytest.FixtureRequest) -> Callable[..., GateReport]:
    """A function that runs a gate on the configured store: ``(champion, challenger, judge, **options)``,
    the options of :func:`ragreplay.api.run_gate`; returns the report."""
    from ragreplay.api import run_gate

    db = store_url(request.config)

    def run(champion: str | Path, challenger: str | Path, judge: str, **options: Any) -> GateReport:
        return run_gate(champion, challenger, judge, db=options.pop("db", db), **options)

    return run


def assert_gate_passes(report: GateReport) -> None:
    """Fail the test unless the gate passed: a failing or unrunnable gate fails with its report, an
    inconclusive one skips the test with the reason (more cases or a stronger judge are needed)."""
    from ragreplay.report.gate import render_gate_text

    decision = report.verdict.decision
    if decision == "pass":
        return
    text = render_gate_text(report)
    if decision == "inconclusive":
        pytest.skip(f"ragreplay gate inconclusive: {'; '.join(report.verdict.reasons) or text}")
    pytest.fail(f"ragreplay gate {decision}:\n{text}", pytrace=False)


def assert_replay_rates(
    run_id: str,
    db: str = DEFAULT_DB,
    min_good_maintenance: float | None = None,
    min_bad_change: float | None = None,
    use_interval: bool = True,
) -> None:
    """Fail unless a replay run's rates clear the given minimums. With ``use_interval`` a rate must clear it
    with the low end of its 95% Wilson interval; a rate whose interval straddles the minimum skips the test."""
    from ragreplay.api import summary

    rates = summary(run_id, db=db).rates
    checks = {"good_maintenance": min_good_maintenance, "bad_change": min_bad_change}
    straddling = []
    for name, minimum in checks.items():
        if minimum is None:
            continue
        rate = getattr(rates, name)
        value = rate.value
        if value is None:
            pytest.skip(f"replay {run_id}: no cases for {name}")
        low, high = (rate.low, rate.high) if use_interval else (value, value)
        if high < minimum:
            pytest.fail(
                f"replay {run_id}: {name} {value:.1%} (95% CI {rate.low:.1%}-{rate.high:.1%}) is below {minimum:.1%}",
                pytrace=False,
            )
        if low < minimum:
            straddling.append(f"{name} {value:.1%} (95% CI {rate.low:.1%}-{rate.high:.1%}) vs {minimum:.1%}")
    if straddling:
        pytest.skip(f"replay {run_id}: not enough cases to decide: {'; '.join(straddling)}")
