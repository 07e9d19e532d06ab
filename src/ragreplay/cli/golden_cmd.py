"""`ragreplay golden ...`: import, export, list, show and build golden sets (named, immutable versions of
questions with their correct answers)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import (
    ConfigOption,
    DbOption,
    check_choice,
    console,
    err_console,
    open_store,
    settings_from,
)
from ragreplay.core.golden import GoldenRow, GoldenSetRecord
from ragreplay.datasets.builders import rows_from_regset, rows_from_reviews
from ragreplay.datasets.export import EXPORT_FORMATS, export_rows, write_whole
from ragreplay.datasets.golden import SavedVersion, import_file, resolve, save_rows
from ragreplay.errors import ConfigError

golden_app = typer.Typer(
    help="Golden sets: named, versioned questions with their correct answers and the chunks that hold them."
)

SHOW_FORMATS = ("text", "json")


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def saved_line(saved: SavedVersion) -> str:
    """What a save did, in one line: the version written, or the unchanged one named."""
    r = saved.record
    if not saved.created:
        return (
            f"golden set {r.ref} already holds these {r.n_rows} rows: no new version ({r.content_hash[:12]})"
        )
    extra = f"; {saved.replaced_chars} unstorable character(s) replaced" if saved.replaced_chars else ""
    return f"saved golden set {r.ref}: {r.n_rows} rows, content {r.content_hash[:12]}{extra}"


def import_(
    file: Annotated[
        Path, typer.Argument(help="JSONL (the eval dataset format) or .csv with the golden columns")
    ],
    name: Annotated[str, typer.Option(help="The golden set's name")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Import a file as the next version of a golden set. Every row is checked first (a bad file writes nothing);
    the same content as the latest version is a no-op."""
    settings = settings_from(config, db=db)
    with open_store(settings.db, create=True) as store:
        saved = import_file(store, file, name)
    if saved.dropped_under_test:
        _say(
            f"{saved.dropped_under_test} row(s) gave an answer or retrieved ids: answers under test, not kept"
        )
    _say(saved_line(saved))


def export(
    ref: Annotated[str, typer.Argument(help="NAME, NAME@vN or NAME@latest")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl | csv")] = "jsonl",
    output: Annotated[Path | None, typer.Option(help="Write to this file [default: stdout]")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write a version's rows as JSONL or CSV (both import back as the same content)."""
    check_choice(fmt, EXPORT_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        record, rows = resolve(store, ref)
    text = export_rows(rows, fmt)
    if output is None:
        sys.stdout.write(text)
        return
    write_whole(output, text)
    _say(f"exported {record.ref} ({record.n_rows} rows) to {output}")


def _version_line(r: GoldenSetRecord) -> str:
    source = r.recipe.get("source", "?")
    return (
        f"{r.ref:<24} {r.created_at:%Y-%m-%d %H:%M}  {r.n_rows:>6} rows  {r.content_hash[:12]}  from {source}"
    )


def list_sets(
    name: Annotated[str | None, typer.Argument(help="Only this set's versions")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Every golden set version, by name, newest first."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        records = store.golden.list_versions(name)
    if not records:
        console.print("no golden sets yet: `ragreplay golden import FILE --name NAME` or `ragreplay synth`")
        return
    for r in records:
        console.print(_version_line(r), markup=False, highlight=False, soft_wrap=True)


def _row_line(row: GoldenRow) -> str:
    ref = "-" if row.reference is None else row.reference
    chunks = ",".join(row.chunk_ids()) or "-"
    return f"{row.id}  Q: {row.question}  A: {ref}  chunks: {chunks}  [{' '.join(row.tags)}]"


def show(
    ref: Annotated[str, typer.Argument(help="NAME, NAME@vN or NAME@latest")],
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    rows: Annotated[int, typer.Option(help="Rows to show (text)")] = 10,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """A version: its recipe, content hash, rows per tag and its first rows."""
    check_choice(fmt, SHOW_FORMATS)
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        record, found = resolve(store, ref)
    if fmt == "json":
        data = {"version": record.model_dump(mode="json"), "rows": [r.as_json() for r in found]}
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return
    lines = [
        _version_line(record),
        f"id {record.id}  content {record.content_hash}",
        "recipe " + json.dumps(record.recipe, ensure_ascii=False, sort_keys=True),
        "tags " + (", ".join(f"{t} {n}" for t, n in record.counts.items()) or "-"),
        *(_row_line(r) for r in found[: max(0, rows)]),
    ]
    if len(found) > rows:
        lines.append(f"... {len(found) - rows} more (--rows N, or `ragreplay golden export {record.ref}`)")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def build(
    name: Annotated[str, typer.Option(help="The golden set's name")],
    from_reviews: Annotated[
        bool,
        typer.Option("--from-reviews", help="Reviewed questions, the reviewer's correct answer as reference"),
    ] = False,
    from_regset: Annotated[
        str | None, typer.Option(help="A regression set version (latest, vN or an id): one row per item")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Build the next version of a golden set from the reviews or from a regression set version."""
    if from_reviews == (from_regset is not None):
        raise ConfigError("give exactly one of --from-reviews and --from-regset VERSION")
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        if from_regset is not None:
            regset, rows = rows_from_regset(store, from_regset)
            recipe = {"source": "regset", "regset": regset.id, "regset_version": regset.version}
        else:
            rows = rows_from_reviews(store)
            recipe = {"source": "reviews"}
            if not rows:
                raise ConfigError(
                    "no review wrote a correct answer yet: nothing to build. Fix: review items with a correct "
                    "answer (`ragreplay review ...`), or build --from-regset"
                )
        saved = save_rows(store, name, rows, recipe)
    _say(saved_line(saved))


golden_app.command(name="import")(import_)
golden_app.command(name="export")(export)
golden_app.command(name="list")(list_sets)
golden_app.command(name="show")(show)
golden_app.command(name="build")(build)
