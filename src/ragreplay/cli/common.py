"""Helpers shared by the CLI commands: consoles, store opening, the model stack."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ragreplay.errors import ConfigError
from ragreplay.settings import Settings, load_settings
from ragreplay.store import Store
from ragreplay.store.location import require_existing_store

console = Console()
err_console = Console(stderr=True)


def settings_from(config: Path | None, **overrides: Any) -> Settings:
    """Settings from the config file, the environment and the given flag values (flags win)."""
    return load_settings(config, os.environ, overrides)


@contextmanager
def open_store(url: str, create: bool = False) -> Iterator[Store]:
    """Open the store at ``url`` for the duration of a command; a SQLite file that does not exist is refused
    (a mistyped ``--db``) unless ``create`` (the commands that fill a store)."""
    if not create:
        require_existing_store(url)
    store = Store.open(url)
    try:
        yield store
    finally:
        store.close()


def parse_tags(values: list[str] | None) -> dict[str, str]:
    """``["dept=hr", "lang=nl"]`` -> ``{"dept": "hr", "lang": "nl"}``."""
    tags: dict[str, str] = {}
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ConfigError(f"--tag {value!r}: expected KEY=VALUE, e.g. --tag department=hr")
        tags[key.strip()] = val.strip()
    return tags


class RateColumn(ProgressColumn):
    """Items per second, from rich's running estimate."""

    def render(self, task: Task) -> Text:
        """``12.3/s``, or a dash before the first estimate."""
        speed = task.finished_speed or task.speed
        return Text("–/s" if speed is None else f"{speed:.1f}/s")


def count_progress() -> Progress:
    """A transient progress bar on stderr with count, rate, ETA and elapsed time."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def compact_table(title: str) -> Table:
    """A borderless table: two spaces between columns, so eight of them fit 80 columns."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)


def add_fitted_columns(
    table: Table, rows: Sequence[Sequence[str]], whole: Sequence[str], cut: Sequence[tuple[str, int]]
) -> None:
    """The columns of a :func:`compact_table` that fits the terminal: the ``whole`` ones first (ids, dates,
    counts: copied or read at a glance) never wrap and are as wide as their widest cell or header; the ``cut``
    ones (names, by weight) share what is left and end in an ellipsis, never narrower than their header."""
    fixed = 0
    for i, col in enumerate(whole):
        width = max([len(col), *(len(row[i]) for row in rows)])
        table.add_column(col, no_wrap=True, min_width=width)
        fixed += width + 2  # two spaces between columns
    left = console.width - fixed - 2 * (len(cut) - 1)
    weights = sum(weight for _, weight in cut)
    given = 0
    for n, (col, weight) in enumerate(cut):
        share = left - given if n == len(cut) - 1 else left * weight // weights
        given += share
        table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=max(6, len(col), share))
