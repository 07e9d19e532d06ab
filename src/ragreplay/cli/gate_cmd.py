"""`ragreplay gate`: may the challenger replace the champion? `ragreplay gates` and `ragreplay gate-report` list
and re-show stored gates.

Exit codes: 0 pass, 1 fail, 2 inconclusive, 3 could not run (a bad flag or policy file, no set, a target or
judge down, too many items that errored). A gate where most items errored never exits 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    check_choice,
    console,
    count_progress,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.gate import EXIT_CODES, GatePolicy
from ragreplay.core.regset import SetItem
from ragreplay.core.sequential import SequentialPlan
from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.gate.estimate import GateEstimate, estimate_gate
from ragreplay.gate.reference_metrics import ReferenceMetrics, check_metrics, gate_reference_metrics
from ragreplay.gate.run import GateReport, gate_target_files, stored_report
from ragreplay.ingest.yaml_files import load_model, read_yaml
from ragreplay.jobs.runner import Progress
from ragreplay.judges.build import default_fit_judge
from ragreplay.providers.pricing import price_table
from ragreplay.report.gate import render_gate, render_gate_markdown
from ragreplay.report.gate_html import GATE_REPORT_FORMATS, render_gate_report
from ragreplay.review.calibration import calibration_report
from ragreplay.review.failure_tags import question_failure_tags
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.store.gates import GateRecord
from ragreplay.targets.config import read_target_file

RULES = ("interval", "point")


def load_policy(path: Path | None, rule: str | None) -> GatePolicy:
    """The policy file's bars (the requirement's defaults without one); ``--rule`` overrides the file."""
    data = read_yaml(path) if path is not None else {}
    if rule is not None:
        if rule not in RULES:
            raise ConfigError(f"--rule {rule!r}: choose interval or point")
        data["rule"] = rule
    return load_model(GatePolicy, data, str(path) if path is not None else "--rule")


async def _gate(
    store: Store,
    settings: Settings,
    set_ref: str,
    champion: Path,
    challenger: Path,
    judge: str,
    fit_judge: str,
    policy: GatePolicy,
    accept_local_judge: bool,
    fresh: bool,
    spend: SpendCheck,
    until: SequentialPlan | None,
) -> GateReport:
    bar = count_progress()
    task = bar.add_task("gating", total=None)

    def on_plan(record: GateRecord, todo: Sequence[SetItem], resumed: bool) -> None:
        n_done = record.n_items - len(todo)
        if resumed:
            err_console.print(
                f"resuming gate {record.id}: {n_done} of {record.n_items} items done", highlight=False
            )
        targets = {
            "champion": read_target_file(champion).target,
            "challenger": read_target_file(challenger).target,
        }
        prices = price_table(settings.prices)
        spend.check(estimate_gate(store, todo, judge, prices, gate=record, targets=targets))
        bar.update(task, total=record.n_items, completed=n_done)

    first: list[Progress] = []

    def on_progress(p: Progress) -> None:
        if not first:
            first.append(p)
        if p is first[0]:
            bar.update(task, completed=p.done)
        elif p.done == 0:  # a batch drawn by --until-decided starts
            bar.update(task, total=(bar.tasks[task].total or 0) + p.total)
        else:
            bar.advance(task)

    with bar:
        return await gate_target_files(
            store=store,
            settings=settings,
            set_ref=set_ref,
            champion=champion,
            challenger=challenger,
            judge_spec=judge,
            fit_judge_spec=fit_judge,
            policy=policy,
            accept_local_judge=accept_local_judge,
            fresh=fresh,
            on_plan=on_plan,
            progress=on_progress,
            until_decided=until,
        )


@dataclass(frozen=True)
class SpendCheck:
    """What may be spent: ``budget`` (USD, None: no limit) and whether the user said yes beforehand."""

    budget: float | None
    yes: bool

    def check(self, estimate: GateEstimate) -> None:
        """Print the estimate; over the budget, ask on a terminal, refuse elsewhere without ``--yes``."""
        err_console.print(f"estimate: {estimate.describe()}", highlight=False)
        if self.budget is None or self.yes:
            return
        over = estimate.cost_usd is None or estimate.cost_usd > self.budget
        if not over:
            return
        what = (
            f"an unknown cost ({'; '.join(estimate.unknown())})"
            if estimate.cost_usd is None
            else f"${estimate.cost_usd:.2f}"
        )
        if sys.stdin.isatty() and typer.confirm(
            f"The gate may cost {what}, over --budget ${self.budget:.2f}. Go on?"
        ):
            return
        raise ConfigError(
            f"--budget {self.budget:g}: the gate may cost {what}. Fix: raise --budget, pass --yes to go on "
            "anyway, or gate a smaller set"
        )


def _failure_tags(store: Store, report: GateReport) -> FailureTags:
    """The failure tags reviewers gave the gate's questions."""
    return question_failure_tags(store, (o.key for o in report.outcomes))


def _emit(
    report: GateReport,
    fmt: str,
    output: Path | None,
    junit: Path | None,
    comment: Path | None,
    failure_tags: FailureTags | None = None,
    metrics: ReferenceMetrics | None = None,
) -> None:
    text = render_gate_report(report, fmt, failure_tags, metrics)
    if output is not None:
        output.write_text(text, encoding="utf-8")
        err_console.print(f"report written to {output}", highlight=False)
    else:
        sys.stdout.write(text)
    if junit is not None:
        junit.write_text(render_gate(report, "junit"), encoding="utf-8")
    if comment is not None:
        comment.write_text(render_gate_markdown(report, failure_tags, metrics), encoding="utf-8")


def _calibration_line(store: Store) -> None:
    """A line when the judge disagrees with reviewers (``ragreplay calibration`` has the figures)."""
    calibration = calibration_report(store).calibration
    if calibration.overall.n and calibration.status == "alert":
        slices = ", ".join(a.label for a in calibration.alerts)
        err_console.print(
            f"judge calibration alert: agreement with reviewers under the bar on {slices}; weigh this gate's "
            "preference figures accordingly (see `ragreplay calibration`)",
            highlight=False,
        )


def _could_not_run(exc: RagreplayError) -> typer.Exit:
    err_console.print(Text("error: ", style="red") + Text(str(exc)), highlight=False, soft_wrap=True)
    err_console.print("the gate could not run (exit 3)", highlight=False)
    return typer.Exit(EXIT_CODES["error"])


def gate(
    champion: Annotated[Path, typer.Option(help="Target YAML of the production configuration")],
    challenger: Annotated[Path, typer.Option(help="Target YAML of the configuration to promote")],
    judge: Annotated[str, typer.Option(help="Pairwise judge: local, or provider:model")],
    set_ref: Annotated[
        str, typer.Option("--set", help="Regression set: latest, vN, an id or a prefix")
    ] = "latest",
    fit_judge: Annotated[
        str | None,
        typer.Option(help="Judge of answers against a reviewer's correct answer [default: matches --judge]"),
    ] = None,
    policy: Annotated[
        Path | None, typer.Option(help="Policy YAML (bars, rule) [default: the requirement's]")
    ] = None,
    rule: Annotated[
        str | None, typer.Option(help="interval (default) | point: overrides the policy's")
    ] = None,
    accept_local_judge: Annotated[
        bool,
        typer.Option(
            "--accept-local-judge", help="Let the local pairwise judge decide (it is weak on unseen data)"
        ),
    ] = False,
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | junit | html")] = "text",
    output: Annotated[Path | None, typer.Option(help="Write the report here instead of stdout")] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Also write JUnit XML here (a test case per bar)")
    ] = None,
    comment: Annotated[
        Path | None, typer.Option(help="Also write the pull-request comment (Markdown) here")
    ] = None,
    db: DbOption = None,
    concurrency: Annotated[int | None, typer.Option(help="Items in flight at once [default: 16]")] = None,
    config: ConfigOption = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start a new gate instead of resuming")] = False,
    budget: Annotated[
        float | None, typer.Option(help="Refuse to start when the estimate is above this (USD)")
    ] = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided", help="Draw more questions for an inconclusive bar from the set's pool"
        ),
    ] = False,
    max_looks: Annotated[
        int, typer.Option(help="--until-decided: looks at most (the error budget is split)")
    ] = 4,
    step: Annotated[int, typer.Option(help="--until-decided: questions drawn per open bar and look")] = 20,
    yes: Annotated[bool, typer.Option("--yes", help="Go on over --budget without asking")] = False,
    metrics: Annotated[
        str | None,
        typer.Option(
            help="Add eval metrics against the reviewers' answers to the report: lexical (no model call)"
        ),
    ] = None,
) -> None:
    """Answer the regression set with the champion and the challenger, judge each pair blind in both orders,
    and decide the three bars: no regression on wins, preference above 55% on contested, at least 20 of 60
    open wounds fixed. Exit 0 pass, 1 fail, 2 inconclusive, 3 could not run. Resumable like every run."""
    try:
        check_choice(fmt, GATE_REPORT_FORMATS)
        gate_policy = load_policy(policy, rule)
        check_metrics(metrics)
        until = None
        if until_decided:
            if max_looks < 2 or step < 1:
                raise ConfigError(
                    f"--max-looks {max_looks} --step {step}: need at least 2 looks and 1 question a step"
                )
            until = SequentialPlan(confidence=gate_policy.confidence, max_looks=max_looks, step=step)
        settings = settings_from(config, db=db, concurrency=concurrency)
        with open_store(settings.db) as store:
            report = asyncio.run(
                _gate(
                    store,
                    settings,
                    set_ref,
                    champion,
                    challenger,
                    judge,
                    fit_judge or default_fit_judge(judge),
                    gate_policy,
                    accept_local_judge,
                    fresh,
                    SpendCheck(budget, yes),
                    until,
                )
            )
            _calibration_line(store)
            failure_tags = _failure_tags(store, report)
            reference_metrics = gate_reference_metrics(store, report, metrics)
    except RagreplayError as exc:
        raise _could_not_run(exc) from None
    _emit(report, fmt, output, junit, comment, failure_tags, reference_metrics)
    raise typer.Exit(report.verdict.exit_code)


def gate_report(
    gate_id: Annotated[str, typer.Argument(help="Gate id or a unique prefix of it")],
    fmt: Annotated[str, typer.Option("--format", help="text | md | json | junit | html")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            help="Add eval metrics against the reviewers' answers to the report: lexical (no model call)"
        ),
    ] = None,
) -> None:
    """Show a stored gate again from its saved items (no call is made); exits with the gate's code."""
    try:
        check_choice(fmt, GATE_REPORT_FORMATS)
        settings = settings_from(config, db=db)
        with open_store(settings.db) as store:
            report = stored_report(store, gate_id)
            failure_tags = _failure_tags(store, report)
            reference_metrics = gate_reference_metrics(store, report, metrics)
    except RagreplayError as exc:  # 3, like the gate: a 2 would read as inconclusive
        raise _could_not_run(exc) from None
    sys.stdout.write(render_gate_report(report, fmt, failure_tags, reference_metrics))
    raise typer.Exit(report.verdict.exit_code)


def gates(
    set_ref: Annotated[str | None, typer.Option("--set", help="Only gates of this regression set")] = None,
    challenger: Annotated[
        str | None, typer.Option(help="Only gates of this challenger (its target name)")
    ] = None,
    limit: Annotated[int, typer.Option(help="Newest N gates")] = 20,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The history of gates, newest first: set, challenger, status and decision."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        set_id = None
        if set_ref is not None:
            found = store.regsets.get_set(set_ref)
            if found is None:
                raise ConfigError(
                    f"--set {set_ref}: no such regression set. Fix: see `ragreplay regset list`."
                )
            set_id = found.id
        records = store.gates.list_gates(set_id=set_id, challenger=challenger, limit=limit)
    table = Table("gate", "created", "set", "challenger", "items", "status", "decision")
    for r in records:
        table.add_row(
            r.id,
            f"{r.created_at:%Y-%m-%d %H:%M}",
            r.set_id,
            r.challenger,
            str(r.n_items),
            r.status.value,
            r.decision or "-",
        )
    console.print(table)


def gate_comment(
    file: Annotated[Path, typer.Argument(help="The Markdown comment (`ragreplay gate --comment FILE`)")],
    repo: Annotated[str, typer.Option(help="owner/name [default: $GITHUB_REPOSITORY]")] = "",
    pr: Annotated[int, typer.Option(help="Pull request number")] = 0,
    api_url: Annotated[
        str, typer.Option(help="GitHub API [default: $GITHUB_API_URL or api.github.com]")
    ] = "",
) -> None:
    """Post the gate's comment on a GitHub pull request, or edit the one posted before (one comment per PR,
    kept up to date). The token comes from $GITHUB_TOKEN."""
    from ragreplay.ci.github import PullRequest, upsert_comment

    token = os.environ.get("GITHUB_TOKEN", "")
    repo = repo or os.environ.get("GITHUB_REPOSITORY", "")
    if not token or not repo or pr < 1:
        raise ConfigError(
            "gate-comment needs $GITHUB_TOKEN, --repo owner/name (or $GITHUB_REPOSITORY) and --pr N. Fix: in a "
            "workflow pass `env: GITHUB_TOKEN: ${{ github.token }}` and `--pr ${{ github.event.number }}`"
        )
    if not file.is_file():
        raise ConfigError(f"{file}: no such file. Fix: write it with `ragreplay gate --comment {file}`")
    api = api_url or os.environ.get("GITHUB_API_URL", "https://api.github.com")
    done = upsert_comment(PullRequest(repo, pr, api), file.read_text(encoding="utf-8"), token)
    err_console.print(f"gate comment {done} on {repo}#{pr}", highlight=False)
