"""The options of `ragreplay` itself, before any command: ``--version``."""

from __future__ import annotations

from typing import Annotated

import typer

from ragreplay import __version__

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
) -> None:
    """The options before any command (the app's help text is the one shown)."""
