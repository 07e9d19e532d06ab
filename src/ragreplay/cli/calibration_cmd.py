"""`ragreplay calibration` (judge vs human; exit 1 on an alert), `ragreplay calibration rejudge` (re-judge the
human-labelled items with a changed judge, old vs new side by side) and `ragreplay calibration history`.

Every calibration computation records a snapshot of each judge version's agreement in the store's calibration
history. Exit codes of `rejudge`: 0 done, 1 the new judge version alerts, 2 a user mistake (a bad flag or judge,
no `--yes` where one is needed), 3 some items could not be judged (a provider failed; run it again to retry
them: nothing already judged is asked again).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from ragreplay.cli import review_cmd
from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    count_progress,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.core.costs import cost_text
from ragreplay.core.judge_version import JudgeVersion
from ragreplay.core.review import Agreement, AlertPolicy
from ragreplay.core.version_agreement import SideBySide, side_by_side
from ragreplay.errors import ConfigError
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.build import build_pairwise_judge
from ragreplay.judges.version import version_of
from ragreplay.providers.pricing import price_table
from ragreplay.providers.registry import ModelFactory
from ragreplay.review.calibration import labelled_items
from ragreplay.review.history import VersionFigures, record_history, version_figures
from ragreplay.review.rejudge import RejudgeEstimate, estimate_rejudge, rejudge, rejudge_plan
from ragreplay.settings import Settings
from ragreplay.shadow.judging import parse_since
from ragreplay.store import Store
from ragreplay.store.calibration_history import CalibrationSnapshot

REJUDGE_EXIT = {"ok": 0, "alert": 1, "mistake": 2, "incomplete": 3}
"""`ragreplay calibration rejudge`'s exit codes."""
FORMATS = ("text", "json")
SINCE_HELP = "Only reviews submitted since: an age (28d) or an ISO date [default: all]"

calibration_app = typer.Typer(
    help="Judge vs human agreement (this command: exit 1 on an alert, 2 on a mistake); `rejudge` the labelled items "
    "with a changed judge, old vs new side by side; the `history` of agreement per judge version."
)


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def _policy(settings: Settings) -> AlertPolicy:
    r = settings.review
    return AlertPolicy(r.alert_overall, r.alert_per_tag, r.min_labels_overall, r.min_labels_tag)


def _format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose text or json")
    return fmt


def _since(since: str | None) -> datetime | None:
    return None if since is None else parse_since(since, datetime.now(UTC))


def _rate(a: Agreement) -> str:
    r = a.agreement
    value = "-" if r.value is None else f"{r.value:.0%}"
    kappa = "-" if a.kappa is None else f"{a.kappa:.2f}"
    return f"{r.k}/{r.n} {value} [{r.low:.0%}, {r.high:.0%}] kappa {kappa}"


def versions_text(figures: VersionFigures) -> str:
    """Each judge version's agreement with reviewers on the items it judged, one line each."""
    lines = ["per judge version (each on the labelled items it judged):"]
    for version, cal in figures.calibrations.items():
        if cal.overall.n:
            lines.append(f"  {figures.labels[version]:<40} {version}  {_rate(cal.overall)}  {cal.status}")
    return "\n".join(lines) + "\n" if len(lines) > 1 else ""


@calibration_app.callback(invoke_without_command=True)
def calibration(
    ctx: typer.Context,
    since: Annotated[str | None, typer.Option(help=SINCE_HELP)] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Judge vs human agreement on the winner (overall, per axis, per tag, per failure tag) with Wilson
    intervals and kappa, and per judge version; each version's figures are added to the calibration history.
    Exits 1 when an alert fires (a lower bound under the threshold), 0 otherwise, 2 on a mistake."""
    if ctx.invoked_subcommand is not None:
        return
    _format(fmt)
    settings = settings_from(config, db=db)
    start = _since(since)
    with open_store(settings.db) as store:
        figures = version_figures(store, start, _policy(settings))
        record_history(store, figures, "calibration", start)
    try:
        review_cmd.calibration(since=since, fmt=fmt, db=db, config=config)
    finally:
        if fmt == "text":
            sys.stdout.write(versions_text(figures))


# --- rejudge -----------------------------------------------------------------------------------------------------


def _confirm(estimate: RejudgeEstimate, yes: bool) -> None:
    """Go on when nothing is to be spent or the user said yes (``--yes``, or at a terminal's prompt)."""
    if estimate.to_call == 0 or yes:
        return
    if sys.stdin.isatty() and typer.confirm("Re-judge now?"):
        return
    raise ConfigError(
        f"the re-judge would make {estimate.to_call} model call(s) (estimate above); nothing was called. "
        "Fix: pass --yes to go on"
    )


async def _rejudge(
    store: Store, settings: Settings, spec: str, since: datetime | None, yes: bool
) -> tuple[JudgeVersion, Progress | None]:
    labelled = labelled_items(store, since)
    async with StoreWriter(store) as writer:
        factory = ModelFactory(settings.model_settings(), cache=writer, env=os.environ)
        try:
            judge = build_pairwise_judge(spec, factory)
            version = version_of(judge)
            todo = rejudge_plan(store, labelled, version)
            estimate = estimate_rejudge(judge, todo, store.cache, price_table(settings.prices))
            _say(
                f"judge version {version.id} ({version.label}); {len(labelled.items)} human-labelled item(s), "
                f"{len(labelled.items) - len(todo)} already judged by this version"
            )
            _say(f"estimate: {estimate.describe()}")
            if not todo:
                return version, None
            _confirm(estimate, yes)
            bar = count_progress()
            task = bar.add_task("re-judging", total=len(todo))

            def show(p: Progress) -> None:
                cost = cost_text(p.cost_usd, p.unpriced_calls)
                bar.update(task, completed=p.done, description=f"re-judging ({p.errors} errors, {cost})")

            with bar:
                progress = await rejudge(writer, judge, version, todo, settings.concurrency, show)
            return version, progress
        finally:
            await factory.aclose()


def _side(s: SideBySide) -> dict[str, Any]:
    def fig(a: Agreement) -> dict[str, Any]:
        r = a.agreement
        return {"n": r.n, "agree": r.k, "rate": r.value, "low": r.low, "high": r.high, "kappa": a.kappa}

    jj = s.old_vs_new
    return {
        "old": {"version": s.old, "judge": s.old_label, **fig(s.old_vs_human)},
        "new": {"version": s.new, "judge": s.new_label, **fig(s.new_vs_human)},
        "old_vs_new": {
            "n": jj.agreement.n,
            "agree": jj.agreement.k,
            "rate": jj.agreement.value,
            "low": jj.agreement.low,
            "high": jj.agreement.high,
            "kappa": jj.kappa,
        },
    }


def side_by_side_text(new: JudgeVersion, figures: VersionFigures, sides: list[SideBySide]) -> str:
    """The new version's agreement, then old vs new on the same items, one block per old version."""
    cal = figures.calibrations.get(new.id)
    lines = [f"new judge {new.label} ({new.id})"]
    if cal is not None:
        lines.append(
            f"  vs reviewers on its {cal.overall.n} labelled item(s): {_rate(cal.overall)}  {cal.status}"
        )
    if not sides:
        lines.append("no other judge version judged these items: nothing to set side by side")
    for s in sides:
        jj = s.old_vs_new
        value = "-" if jj.agreement.value is None else f"{jj.agreement.value:.0%}"
        kappa = "-" if jj.kappa is None else f"{jj.kappa:.2f}"
        lines += [
            f"old vs new on the same {s.n} item(s) (both scored, reviewers agreed on a winner):",
            f"  {'judge':<44} {'vs reviewers':<34}",
            f"  old {s.old_label:<40} {_rate(s.old_vs_human)}",
            f"  new {s.new_label:<40} {_rate(s.new_vs_human)}",
            f"  old and new name the same winner: {jj.agreement.k}/{jj.agreement.n} {value} "
            f"[{jj.agreement.low:.0%}, {jj.agreement.high:.0%}] kappa {kappa}",
        ]
    return "\n".join(lines) + "\n"


@calibration_app.command(name="rejudge")
def rejudge_cmd(
    judge: Annotated[str, typer.Option(help="The (changed) pairwise judge: local, or provider:model")],
    since: Annotated[str | None, typer.Option(help=SINCE_HELP)] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Make the model calls without asking")] = False,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Items judged at once [default: 16]")] = None,
    config: ConfigOption = None,
) -> None:
    """Re-judge the human-labelled items with JUDGE: a cost estimate first, then only the items this judge
    version has not judged, both A/B orders, resumable; then each version's agreement with reviewers, old vs new
    side by side on the same items. Exit 0 done, 1 the new version alerts, 2 a mistake, 3 items left unjudged."""
    _format(fmt)
    settings = settings_from(config, db=db, concurrency=concurrency)
    start = _since(since)
    with open_store(settings.db) as store:
        version, progress = asyncio.run(_rejudge(store, settings, judge, start, yes))
        figures = version_figures(store, start, _policy(settings))
        record_history(store, figures, "rejudge", start)
    if progress is not None:
        _say(
            f"judged {progress.done - progress.errors} item(s) ({progress.unscorable} could not be scored), "
            f"{cost_text(progress.cost_usd, progress.unpriced_calls)}"
            + (
                f"; {progress.errors} failed and were not saved: run it again to retry them"
                if progress.errors
                else ""
            )
        )
    sides = side_by_side(
        figures.labelled.items, figures.labelled.reviews, figures.decisions, version.id, _policy(settings)
    )
    if fmt == "json":
        cal = figures.calibrations.get(version.id)
        data = {
            "judge_version": version.id,
            "judge": version.label,
            "judged": 0 if progress is None else progress.done - progress.errors,
            "errors": 0 if progress is None else progress.errors,
            "status": None if cal is None else cal.status,
            "side_by_side": [_side(s) for s in sides],
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(side_by_side_text(version, figures, sides))
    cal = figures.calibrations.get(version.id)
    if progress is not None and progress.errors:
        raise typer.Exit(REJUDGE_EXIT["incomplete"])
    if cal is not None and cal.status == "alert":
        raise typer.Exit(REJUDGE_EXIT["alert"])


# --- history -----------------------------------------------------------------------------------------------------


def _snapshot_json(s: CalibrationSnapshot) -> dict[str, Any]:
    return s.model_dump(mode="json")


def history_text(snapshots: list[CalibrationSnapshot]) -> str:
    """The history, newest first, one line a snapshot."""
    lines = [
        f"{'computed (UTC)':<17} {'judge':<40} {'version':<19} {'n':>4} {'agree':>5} {'rate':>5} "
        f"{'95% CI':<12} {'kappa':>5}  status / source"
    ]
    for s in snapshots:
        value = "-" if s.agreement is None else f"{s.agreement:.0%}"
        kappa = "-" if s.kappa is None else f"{s.kappa:.2f}"
        ci = f"[{s.low:.0%}, {s.high:.0%}]"
        lines.append(
            f"{s.computed_at:%Y-%m-%d %H:%M} {s.judge:<40} {s.judge_version:<19} {s.n:>4} {s.agree:>5} "
            f"{value:>5} {ci:<12} {kappa:>5}  {s.status} / {s.source}"
        )
    return "\n".join(lines) + "\n"


@calibration_app.command(name="history")
def history_cmd(
    version: Annotated[
        str | None, typer.Option("--judge-version", help="Only this judge version (jv_...)")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Snapshots at most")] = 50,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Each judge version's agreement with reviewers over time, newest first (a snapshot per calibration
    computation that changed a version's figures)."""
    _format(fmt)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        snapshots = store.calibration_history.list_history(version, limit)
    if fmt == "json":
        sys.stdout.write(json.dumps([_snapshot_json(s) for s in snapshots], indent=2) + "\n")
        return
    if not snapshots:
        _say("no calibration history yet: run `ragreplay calibration` once reviews are in")
        return
    sys.stdout.write(history_text(snapshots))
