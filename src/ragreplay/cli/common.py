"""Helpers shared by the CLI commands: consoles, the output mode (--quiet / --verbose), progress, store
opening, compact tables."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ragreplay.errors import ConfigError

# imported where used: `ragreplay --help` imports neither (nor SQLAlchemy and the HTTP clients behind them)
if TYPE_CHECKING:
    from ragreplay.settings import Settings
    from ragreplay.store import Store

DbOption = Annotated[str | None, typer.Option(help="Store URL or SQLite path [default: ragreplay.db]")]
"""Every command's ``--db`` option (``None``: the settings' store)."""
ConfigOption = Annotated[Path | None, typer.Option(help="Settings file [default: ./ragreplay.yaml]")]
"""Every command's ``--config`` option (``None``: ``./ragreplay.yaml`` when there is one)."""

console = Console()
err_console = Console(stderr=True)
log = logging.getLogger("ragreplay.cli")


@dataclass
class OutputMode:
    """What the root command's ``--quiet`` / ``--verbose`` set for every command: read by :func:`info` and
    :func:`progress_display`, so no command handles the flags itself."""

    quiet: bool = False
    verbose: bool = False


OUTPUT = OutputMode()


class _StderrHandler(logging.Handler):
    """Log records as plain lines on the current ``sys.stderr`` (looked up at each record: tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # logging must never end a command
            self.handleError(record)


_debug_handler = _StderrHandler()
_debug_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))


def set_output_mode(quiet: bool, verbose: bool) -> None:
    """Set :data:`OUTPUT` for this invocation; ``verbose`` also logs ``ragreplay``'s debug lines on stderr."""
    if quiet and verbose:
        raise ConfigError("--quiet and --verbose: choose one")
    OUTPUT.quiet, OUTPUT.verbose = quiet, verbose
    root = logging.getLogger("ragreplay")
    root.removeHandler(_debug_handler)
    root.setLevel(logging.DEBUG if verbose else logging.NOTSET)
    if verbose:
        root.addHandler(_debug_handler)
    # The database driver warns while it cleans up after a lost connection ("error ignored terminating
    # <psycopg.Pipeline>"); the command's own error already says what happened and what to do.
    logging.getLogger("psycopg").setLevel(logging.NOTSET if verbose else logging.ERROR)


def info(message: str, *, to: Console | None = None, highlight: bool = False) -> None:
    """An informational line (what is started, resumed or shown again, where a file went), on stderr unless
    ``to`` says otherwise; ``--quiet`` hides it. Errors and results are printed directly, never through this."""
    if not OUTPUT.quiet:
        (to or err_console).print(message, highlight=highlight)


def settings_from(config: Path | None, **overrides: Any) -> Settings:
    """Settings from the config file, the environment and the given flag values (flags win)."""
    from ragreplay.settings import load_settings

    return load_settings(config, os.environ, overrides)


@contextmanager
def open_store(url: str, create: bool = False) -> Iterator[Store]:
    """Open the store at ``url`` for the duration of a command; a SQLite file that does not exist is refused
    (a mistyped ``--db``) unless ``create`` (the commands that fill a store)."""
    from ragreplay.store import Store
    from ragreplay.store.location import require_existing_store

    if not create:
        require_existing_store(url)
    store = Store.open(url)
    log.debug("opened the store at %s", store.url)
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


def check_choice(value: str, choices: Sequence[str], flag: str = "--format") -> None:
    """A :class:`ConfigError` naming ``flag``, the value given and the ``choices`` when ``value`` is not one."""
    if value not in choices:
        raise ConfigError(f"{flag} {value!r}: choose one of {', '.join(choices)}")


def emit_text(text: str, output: Path | None, what: str = "report") -> None:
    """``text`` on stdout, or into ``output`` whole (a temporary file renamed over it: never half-written) with
    an informational ``<what> written to <output>`` line."""
    if output is None:
        sys.stdout.write(text)
        return
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    info(f"{what} written to {output}")


class RateColumn(ProgressColumn):
    """Items per second, from rich's running estimate."""

    def render(self, task: Task) -> Text:
        """``12.3/s``, or a dash before the first estimate."""
        speed = task.finished_speed or task.speed
        return Text("–/s" if speed is None else f"{speed:.1f}/s")


def count_progress(*extra: str | ProgressColumn) -> Progress:
    """A transient progress bar on stderr with count, rate, ETA and elapsed time, then the ``extra`` columns
    (see :func:`progress_display`)."""
    return progress_display(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        *extra,
    )


def unpriced_note(specs: Sequence[str | None], prices: Any = None, unpriced_calls: int = 0) -> str:
    """`` + price unknown (spec, ..., N calls)`` for a progress's cost: the model ``specs`` with no price (in
    the config's ``prices`` or the built-in table) and the ``unpriced_calls`` counted so far, whose dollars are
    not in the cost shown; an empty string when every call is priced (see ``core/costs``)."""
    from ragreplay.providers.pricing import lookup_price, price_table

    table = price_table(prices)
    named = dict.fromkeys(spec for spec in specs if spec and ":" in spec)
    unknown = [spec for spec in named if lookup_price(spec, table) is None]
    if unpriced_calls:
        unknown.append(f"{unpriced_calls} call{'' if unpriced_calls == 1 else 's'}")
    return f" + price unknown ({', '.join(unknown)})" if unknown else ""


PIPE_PROGRESS_EVERY_S = 5.0
"""Seconds between two progress lines when stderr is not a terminal (``RAGREPLAY_PROGRESS_EVERY_S``)."""


def progress_display(*columns: str | ProgressColumn, transient: bool = True) -> Progress:
    """Every command's progress on stderr: a live bar of ``columns`` on a terminal, plain lines
    (:class:`LineProgress`) in a pipe or a CI log, nothing under ``--quiet``."""
    if OUTPUT.quiet:
        return Progress(*columns, console=err_console, disable=True)
    if not err_console.is_terminal:
        every_s = float(os.environ.get("RAGREPLAY_PROGRESS_EVERY_S", PIPE_PROGRESS_EVERY_S))
        return LineProgress(*columns, console=err_console, every_s=every_s)
    return Progress(*columns, console=err_console, transient=transient)


class LineProgress(Progress):
    """rich's Progress for a stderr that is not a terminal (a pipe, a CI log), where a bar is never drawn: a
    start line, then a plain line at most every ``every_s`` seconds as items finish (counts, rate, ETA, and the
    cost so far, errors and unscorable items when the task has those fields), and the last counts at the end."""

    def __init__(self, *columns: str | ProgressColumn, every_s: float, **kwargs: Any) -> None:
        super().__init__(*columns, disable=True, **kwargs)
        self.every_s = every_s
        self._running = False
        self._shown_at: dict[TaskID, float] = {}
        self._shown_done: dict[TaskID, float] = {}

    def start(self) -> None:
        """Start, with a start line for each task."""
        super().start()
        self._running = True
        for task in self.tasks:
            self._start_line(task)

    def stop(self) -> None:
        """Stop, with the last counts of each task not shown yet."""
        if self._running:
            for task in self.tasks:
                if self._shown_done.get(task.id) != task.completed:
                    self._line(task)
        self._running = False
        super().stop()

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> TaskID:
        """Add a task; one added while running gets its start line at once."""
        task_id = super().add_task(description, start, total, completed, visible, **fields)
        if self._running:
            self._start_line(self._tasks[task_id])
        return task_id

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None:
        """Update the task, and print a line if it is time."""
        super().update(
            task_id,
            total=total,
            completed=completed,
            advance=advance,
            description=description,
            visible=visible,
            refresh=refresh,
            **fields,
        )
        self._maybe_line(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        """Advance the task, and print a line if it is time."""
        super().advance(task_id, advance)
        self._maybe_line(task_id)

    def _maybe_line(self, task_id: TaskID) -> None:
        task = self._tasks[task_id]
        if not self._running or self._shown_done.get(task_id) == task.completed:
            return
        if not task.finished and self.get_time() - self._shown_at.get(task_id, float("-inf")) < self.every_s:
            return
        self._line(task)

    def _start_line(self, task: Task) -> None:
        of = "" if task.total is None else f"/{task.total:g}"
        self._print(f"{task.description}: started, {task.completed:g}{of} done")
        self._shown_at[task.id] = self.get_time()
        self._shown_done[task.id] = task.completed

    def _line(self, task: Task) -> None:
        parts = [f"{task.completed:g}"]
        if task.total:
            parts[0] += f"/{task.total:g} ({100 * task.completed / task.total:.0f}%)"
        speed = task.finished_speed or task.speed
        parts.append("–/s" if speed is None else f"{speed:.1f}/s")
        if not task.finished:
            parts.append(f"ETA {_duration(task.time_remaining)}")
        if "cost" in task.fields:
            parts.append(f"${task.fields['cost']:.4f}{task.fields.get('unpriced', '')} so far")
        for name in ("errors", "unscorable"):
            if task.fields.get(name):
                parts.append(f"{task.fields[name]} {name}")
        parts.append(f"{_duration(task.elapsed)} elapsed")
        self._print(f"{task.description}: " + ", ".join(parts))
        self._shown_at[task.id] = self.get_time()
        self._shown_done[task.id] = task.completed

    def _print(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        self.console.file.flush()


def _duration(seconds: float | None) -> str:
    """``1h02m``, ``3m08s``, ``12s``; a dash when unknown."""
    if seconds is None:
        return "–"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


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
