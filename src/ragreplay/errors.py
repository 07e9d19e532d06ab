"""Errors a user can fix, each saying where the problem is and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass


class RagreplayError(Exception):
    """A problem caused by input or configuration; the CLI prints it without a traceback."""


@dataclass(frozen=True)
class InputProblem:
    """One problem in an input file: where it is, which field, what is wrong and how to fix it."""

    file: str
    line: int | None
    field: str | None
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        field = f" field '{self.field}'" if self.field else ""
        fix = f" Fix: {self.fix}" if self.fix else ""
        return f"{where}:{field} {self.message}.{fix}"


class InputError(RagreplayError):
    """One or more problems in an input file; nothing was written."""

    def __init__(self, problems: list[InputProblem], more: int = 0) -> None:
        self.problems = problems
        self.more = more
        lines = [str(p) for p in problems]
        if more:
            lines.append(f"... and {more} more problem(s)")
        super().__init__("\n".join(lines))


class ConfigError(RagreplayError):
    """A configuration file or flag is invalid."""


def describe_exception(exc: BaseException) -> str:
    """``ExceptionClass: message``, as stored in ``Answer.error``."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
