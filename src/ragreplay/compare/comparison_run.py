"""The whole `ragreplay compare` job: build the judges and targets, answer and judge every case not yet stored,
summarise from the store."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from ragreplay.compare.case_comparison import CaseComparison, ComparisonSetup, compare_case, side_dates
from ragreplay.compare.grid import ComparisonSummary
from ragreplay.compare.stored import comparison_config, plan_comparison, row_records, summary_from_store
from ragreplay.core.comparisons import ComparisonRecord
from ragreplay.core.runs import RunStatus
from ragreplay.core.types import Case
from ragreplay.errors import ConfigError
from ragreplay.jobs.runner import JobPlan, Progress, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_fit_judge, build_pairwise_judge
from ragreplay.judges.position import OrderMode
from ragreplay.ports import ComparisonStore, Target
from ragreplay.providers.registry import ModelFactory
from ragreplay.targets.loader import load_target

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_challengers(values: Sequence[str]) -> dict[str, Path]:
    """``["a=cand_a.yaml", "cand_b.yaml"]`` -> ``{"a": Path("cand_a.yaml"), "cand_b": Path("cand_b.yaml")}``."""
    named: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            name, path = Path(value).stem, value
        name = name.strip()
        if not _NAME.match(name) or name == "champion":
            raise ConfigError(
                f"--challenger {value!r}: the name {name!r} must be letters, digits, '.', '_' or '-' and not "
                "'champion'. Fix: --challenger NAME=PATH, e.g. --challenger a=cand_a.yaml"
            )
        if name in named:
            raise ConfigError(
                f"--challenger {value!r}: the name {name!r} is used twice. Fix: give each a name"
            )
        named[name] = Path(path.strip())
    if not named:
        raise ConfigError("no challenger given. Fix: --challenger NAME=PATH (repeatable)")
    return named


def load_targets(champion: Path, challengers: Mapping[str, Path]) -> tuple[Target, dict[str, Target]]:
    """Build the champion and every challenger target from their YAML files."""
    return load_target(champion), {name: load_target(path) for name, path in challengers.items()}


PlanCallback = Callable[[ComparisonRecord, int, bool], None]
"""``on_plan(comparison, n_already_done, reused)``: called once the comparison to fill is known."""


async def run_comparison(
    *,
    store: ComparisonStore,
    writer: StoreWriter,
    factory: ModelFactory,
    champion: Target,
    challengers: Mapping[str, Target],
    judge_spec: str,
    fit_judge_spec: str,
    cases: Sequence[Case],
    questions: Mapping[str, str],
    cases_label: str,
    order: OrderMode = "both",
    seed: int | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
    on_plan: PlanCallback | None = None,
    fresh: bool = False,
) -> ComparisonSummary:
    """Compare on ``cases`` and return the summary, built from the stored rows; targets are closed at the end.

    The same configuration on the same cases fills the newest such comparison in ``store`` (unless ``fresh``):
    cases whose rows are saved already are not answered nor judged again. Each case's rows are saved as soon
    as it is done; the comparison is marked ``done`` at the end, ``interrupted`` on any exception or Ctrl-C.
    """
    try:
        pairwise = build_pairwise_judge(judge_spec, factory)
        fit_judge = build_fit_judge(fit_judge_spec, factory)
        config = comparison_config(
            champion=champion,
            challengers=challengers,
            pairwise=pairwise,
            fit_judge=fit_judge,
            judge_spec=judge_spec,
            fit_judge_spec=fit_judge_spec,
            order=order,
            seed=seed,
            cases_label=cases_label,
        )
        record, reused = plan_comparison(store, config, [c.id for c in cases], fresh)
        saved = store.comparisons.comparison_row_keys(record.id)
        todo = [c for c in cases if any((c.id, name) not in saved for name in challengers)]
        if on_plan is not None:
            on_plan(record, len(cases) - len(todo), reused)
        if todo or record.status != RunStatus.DONE:
            await _fill(
                store,
                writer,
                record.id,
                todo,
                questions,
                on_case,
                ComparisonSetup(
                    champion=champion,
                    challengers=challengers,
                    pairwise=pairwise,
                    fit_judge=fit_judge,
                    order=order,
                    seed=seed,
                    concurrency=concurrency,
                ),
            )
    finally:
        for target in (champion, *challengers.values()):
            await target.aclose()
    stored = store.comparisons.get_comparison(record.id)
    assert stored is not None  # created or found above, and comparisons are never deleted
    return summary_from_store(store, stored)


CaseCallback = Callable[[CaseComparison], None]
"""Called as each case's rows are saved (for progress)."""


@dataclass
class ComparisonJob:
    """The comparison as a job of the one runner: each case answered, judged and saved through the writer."""

    setup: ComparisonSetup
    writer: StoreWriter
    comparison_id: str
    questions: Mapping[str, str]
    on_case: CaseCallback | None = None
    dates: dict[str, dict[str, date]] = field(default_factory=dict)

    async def run_one(self, case: Case) -> CaseComparison:
        """Compare one case and save its rows; returns once they are committed."""
        done = await compare_case(self.setup, case, self.questions.get(case.id, case.query), self.dates)
        await self.writer.save_comparison_rows(
            row_records(self.comparison_id, done.rows, done.outcomes, done.generators)
        )
        if self.on_case is not None:
            self.on_case(done)
        return done

    def count(self, progress: Progress, result: CaseComparison) -> None:
        """A case with any failed side counts as an error."""
        progress.errors += any(row.error for row in result.rows)


async def _fill(
    store: ComparisonStore,
    writer: StoreWriter,
    comparison_id: str,
    todo: Sequence[Case],
    questions: Mapping[str, str],
    on_case: CaseCallback | None,
    setup: ComparisonSetup,
) -> None:
    """Compare the ``todo`` cases, saving each case's rows as it finishes, then mark the comparison done."""
    job = ComparisonJob(setup, writer, comparison_id, questions, on_case, side_dates(setup))
    try:
        await run_job(job, JobPlan(todo=todo, progress=Progress(total=len(todo))), setup.concurrency)
    except BaseException:
        with contextlib.suppress(Exception):  # never hide why the comparison stopped
            store.comparisons.set_comparison_status(comparison_id, RunStatus.INTERRUPTED)
        raise
    store.comparisons.set_comparison_status(comparison_id, RunStatus.DONE, datetime.now(UTC))
