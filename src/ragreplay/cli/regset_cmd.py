"""`ragreplay regset ...`: build, list, show, diff, export, import, pin and drop regression set versions."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TaskID

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
from ragreplay.core.gate import GRADUATE_AFTER
from ragreplay.core.regset import STRATA, Source, Stratum
from ragreplay.errors import ConfigError
from ragreplay.gate.run import graduated_keys, open_wound_keys
from ragreplay.regset.build import EMBEDDERS, BuiltSet, build_regset, rebuild
from ragreplay.regset.versions import (
    OverrideOutcome,
    diff_versions,
    drop_item,
    export_version,
    import_version,
    load_version,
    pin_item,
)
from ragreplay.report.regset import (
    DIFF_FORMATS,
    SHOW_FORMATS,
    render_diff_json,
    render_diff_text,
    render_sets,
    render_version,
    shortfall_lines,
    strata_line,
)
from ragreplay.review.references import reviewed_references
from ragreplay.shadow.judging import parse_since
from ragreplay.store import Store

regset_app = typer.Typer(
    help="The regression set: a versioned sample of real questions (wins, contested, open wounds) for the gate."
)

SOURCES: dict[str, tuple[Source, ...]] = {
    "shadow": ("shadow",),
    "replay": ("replay",),
    "both": ("shadow", "replay"),
}


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def parse_window(since: str, until: str | None, now: datetime) -> tuple[datetime, datetime]:
    """``--since`` and ``--until`` (ages count back from ``now``; ``--until`` defaults to ``now``)."""
    start = parse_since(since, now)
    if until is None:
        return start, now
    try:
        end = parse_since(until, now)
    except ConfigError:
        raise ConfigError(
            f"--until {until!r} is not an age or a date. Fix: use e.g. 1d, 12h or 2026-12-01 (the window ends "
            "before it)"
        ) from None
    if end <= start:
        raise ConfigError(
            f"--until {until!r} ({end:%Y-%m-%d %H:%M} UTC) is not after --since {since!r} "
            f"({start:%Y-%m-%d %H:%M} UTC). Fix: give an --until later than --since."
        )
    return start, end


def check_sizes(wins: int, contested: int, wounds: int) -> dict[Stratum, int]:
    """The strata sizes of the flags; `ConfigError` naming a negative one."""
    for flag, value in (("--wins", wins), ("--contested", contested), ("--wounds", wounds)):
        if value < 0:
            raise ConfigError(f"{flag} {value}: a stratum size must be 0 or more. Fix: e.g. {flag} 60")
    if wins + contested + wounds == 0:
        raise ConfigError(
            "--wins, --contested and --wounds are all 0: the set would be empty. Fix: give sizes."
        )
    return {"win": wins, "contested": contested, "wound": wounds}


def _graduated(store: Store, after: int) -> frozenset[str]:
    """Wounds of the latest version fixed in each of their last ``after`` gates (none with ``after`` 0)."""
    latest = store.regsets.get_set("latest")
    if after == 0 or latest is None:
        return frozenset()
    wounds = [i.key for i in store.regsets.load_items(latest.id) if i.stratum == "wound"]
    return graduated_keys(store, wounds, after) if wounds else frozenset()


def _left_open(store: Store) -> frozenset[str]:
    """Questions of the latest version its newest gate left failing (open wounds for the next version)."""
    latest = store.regsets.get_set("latest")
    if latest is None:
        return frozenset()
    return open_wound_keys(store, [i.key for i in store.regsets.load_items(latest.id)])


def _report_build(built: BuiltSet) -> None:
    record, figures = built.record, built.figures
    console.print(
        f"built regression set {record.label} ({record.id}): {strata_line(record, built.items)}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    read = figures.read
    found = [f"{figures.candidates} candidate(s)"]
    if "shadow" in record.recipe["sources"]:
        found.append(
            f"{read['shadow_rows']} shadow row(s) ({read['shadow_judged']} judged, "
            f"{read['shadow_with_feedback']} with feedback, {read['shadow_champion_failed']} left out: champion failed)"
        )
    if "replay" in record.recipe["sources"]:
        found.append(
            f"{read['replay_cases']} replay case(s) ({read['replay_follow_ups_unpinned']} follow-up(s) left out: "
            "no pinned standalone question; `ragreplay run` pins them)"
        )
    pools = ", ".join(
        f"{s} {figures.pool_sizes.get(s, 0)} in {figures.clusters.get(s, 0)} cluster(s)" for s in STRATA
    )
    _say(f"read {'; '.join(found)}")
    _say(f"pool: {pools}; {figures.near_duplicates_merged} near-duplicate(s) merged")
    sampled = [f"{s} {kept:,} of {held:,}" for s, (kept, held) in figures.phase_one.items() if kept < held]
    if sampled:
        _say(
            f"sampled before comparing (phase one, weights account for it): {'; '.join(sampled)} question(s)"
        )
    graduated = record.recipe.get("graduated", [])
    if graduated:
        _say(f"{len(graduated)} wound(s) graduated to wins (fixed in their last gates)")
    if figures.pins_carried:
        _say(f"{figures.pins_carried} pinned question(s) not in the window, carried from earlier versions")
    if figures.pins_missing:
        _say(f"{len(figures.pins_missing)} pinned key(s) found nowhere: {', '.join(figures.pins_missing)}")
    for line in shortfall_lines(record):
        _say(f"short: {line}. Fix: widen --since, add --source both, or ask for fewer.")


def build(
    since: Annotated[str, typer.Option(help="Window start: an age (7d, 24h, 30m) or an ISO date")] = "7d",
    until: Annotated[
        str | None, typer.Option(help="Window end (excluded): an age or an ISO date [default: now]")
    ] = None,
    wins: Annotated[int, typer.Option(help="Questions in the wins stratum")] = 80,
    contested: Annotated[int, typer.Option(help="Questions in the contested stratum")] = 60,
    wounds: Annotated[int, typer.Option(help="Questions in the open wounds stratum")] = 60,
    seed: Annotated[int, typer.Option(help="Seed of the sample (recorded in the recipe)")] = 0,
    source: Annotated[str, typer.Option(help="shadow | replay | both")] = "both",
    margin: Annotated[
        float, typer.Option(help="Score margin under which a judged pair is a close call")
    ] = 0.5,
    embedder: Annotated[
        str, typer.Option(help="Question embedder: use | e5 (packaged models) | hash")
    ] = "use",
    redact: Annotated[
        str, typer.Option(help="Redactor for replay logs' texts: default | none | module:function")
    ] = "default",
    graduate_after: Annotated[
        int, typer.Option(help="A wound fixed in this many consecutive gates becomes a win (0: never)")
    ] = GRADUATE_AFTER,
    note: Annotated[str, typer.Option(help="A note stored with the version")] = "",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Build a new version from the shadow log and ingested logs of a window: the questions sorted into wins,
    contested and open wounds, deduped, clustered, and sampled evenly across clusters with a recorded seed.
    Each item keeps its inclusion probability and weight. Strata the window cannot fill are reported."""
    now = datetime.now(UTC).replace(microsecond=0)
    start, end = parse_window(since, until, now)
    sizes = check_sizes(wins, contested, wounds)
    if source not in SOURCES:
        raise ConfigError(f"--source {source!r}: choose shadow, replay or both")
    check_choice(embedder, EMBEDDERS, "--embedder")
    if graduate_after < 0:
        raise ConfigError(f"--graduate-after {graduate_after}: must be 0 (never) or more")
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        bar = count_progress()
        task: list[TaskID] = []

        def on_progress(done: int, total: int) -> None:
            if not task:
                task.append(bar.add_task("embedding questions", total=total))
            bar.update(task[0], completed=done, total=total)

        with bar:
            built = build_regset(
                store,
                start,
                end,
                sizes,
                seed,
                SOURCES[source],
                margin,
                embedder=embedder,
                redactor=redact,
                graduated=_graduated(store, graduate_after),
                open_wounds=_left_open(store),
                references=reviewed_references(store),
                note=note,
                progress=on_progress,
                now=now,
            )
    _report_build(built)


def list_sets(
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List the versions, newest first."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.regsets.list_sets()
    if not records:
        _say("no regression set yet: build one with `ragreplay regset build`")
        return
    sys.stdout.write(render_sets(records))


def show(
    ref: Annotated[str, typer.Argument(help="latest, vN, or a version id (or a unique prefix)")] = "latest",
    fmt: Annotated[str, typer.Option("--format", help="text | md | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Show a version: its recipe, strata (with what each stands for in traffic) and every item."""
    check_choice(fmt, SHOW_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        version = load_version(store, ref)
        reasons = store.regsets.override_reasons()
    sys.stdout.write(render_version(version, fmt, reasons))


def diff(
    old: Annotated[str, typer.Argument(help="The older version (vN, latest or an id)")],
    new: Annotated[str, typer.Argument(help="The newer version")],
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """What changed between two versions: questions added, removed, and moved between strata."""
    check_choice(fmt, DIFF_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        changes = diff_versions(store, old, new)
    sys.stdout.write(render_diff_json(changes) if fmt == "json" else render_diff_text(changes))


def export(
    ref: Annotated[str, typer.Argument(help="The version to export (vN, latest or an id)")],
    file: Annotated[Path, typer.Argument(help="The JSONL file to write")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write a version to a JSONL file: the record on the first line, then one item per line."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        version = export_version(store, ref, file)
    _say(f"exported {version.record.label} ({version.record.id}, {len(version.items)} items) to {file}")


def import_(
    file: Annotated[Path, typer.Argument(help="A JSONL file written by `ragreplay regset export`")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Import an exported set as a new version. Every line is checked first; a bad file writes nothing."""
    settings = settings_from(config, db=db)
    with open_store(settings.db, create=True) as store:
        version = import_version(store, file)
    _say(f"imported {file} as {version.record.label} ({version.record.id}): {version.record.note}")


def _override(outcome: OverrideOutcome) -> None:
    _say(outcome.message)
    if outcome.version is None:
        _say("no new version: the override is recorded for later builds")


def pin(
    key: Annotated[str, typer.Argument(help="The item key (q_...), from `ragreplay regset show`")],
    reason: Annotated[str, typer.Option(help="Why this question must stay in the set")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Pin a question: it is in every later version (probability 1). Makes a new version from the latest."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        _override(pin_item(store, key.strip(), reason))


def drop(
    key: Annotated[str, typer.Argument(help="The item key (q_...), from `ragreplay regset show`")],
    reason: Annotated[str, typer.Option(help="Why this question must leave the set")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Drop a question: no later version holds it. Makes a new version from the latest without it."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        _override(drop_item(store, key.strip(), reason))


def check(
    ref: Annotated[str, typer.Argument(help="A built version (vN, latest or an id)")] = "latest",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Rebuild a version from its recipe on the store's content now (storing nothing) and say whether it gives
    the same items. Exit 0 when identical, 1 when not."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        record = load_version(store, ref).record
        again = rebuild(store, record)
    if again.identical:
        _say(
            f"{record.label} ({record.id}) is reproducible: its recipe gives the same {len(again.items)} items"
        )
        return
    inputs = "the same" if again.digest == record.inputs_digest else "different"
    _say(
        f"{record.label} ({record.id}) is not reproduced: its recipe now reads {inputs} candidates and "
        f"gives other items (the store changed since it was built?)"
    )
    raise typer.Exit(1)


regset_app.command(name="build")(build)
regset_app.command(name="list")(list_sets)
regset_app.command(name="show")(show)
regset_app.command(name="diff")(diff)
regset_app.command(name="export")(export)
regset_app.command(name="import")(import_)
regset_app.command(name="pin")(pin)
regset_app.command(name="drop")(drop)
regset_app.command(name="check")(check)
