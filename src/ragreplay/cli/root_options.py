"""The options of `ragreplay` itself, before any command: ``--version``, ``--quiet``, ``--verbose``."""

from __future__ import annotations

from typing import Annotated

import typer

from ragreplay import __version__
from ragreplay.cli.common import set_output_mode

EXIT_CODES = (
    "Exit codes: 0 done; 1 a check failed (regset check, calibration alert); 2 a mistake to fix (the message "
    "names the file, line or flag, and the fix); 75 the store stopped answering (the same command resumes); "
    "130 interrupted (the same command resumes); the gate: 0 pass, 1 fail, 2 inconclusive, 3 could not run."
)
"""Shown under ``ragreplay --help`` and in the README."""


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ragreplay {__version__}")
        raise typer.Exit()


def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print ragreplay's version and exit."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="No progress nor informational lines: results and errors only (same exit codes).",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Debug log lines on stderr, and the traceback of an unexpected error."
        ),
    ] = False,
) -> None:
    """The options before any command (the app's help text is the one shown)."""
    set_output_mode(quiet, verbose)
