"""A command group that imports a command's module only when that command runs or shows its help.

``ragreplay --help`` lists every command from the names and one-line helps given up front
(:class:`LazyCommand`), so it imports none of them (nor the store, the HTTP clients, the servers they import).
A command is converted by typer exactly as ``app.command(name=...)(function)`` or ``app.add_typer(sub, name=...)``
would convert it, so its own ``--help``, options and behaviour are unchanged.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, ClassVar

import typer
from typer import _click
from typer.core import TyperGroup

from ragreplay.errors import import_extra

TYPER_SETTINGS: dict[str, Any] = {
    "pretty_exceptions_enable": False,
    "add_completion": False,
    # plain help: rich markup would swallow the "[default: ...]" of every option's help text
    "rich_markup_mode": None,
}
"""The settings of the root app, given to each command's conversion too."""

SERVER_STACK = ("uvicorn", "starlette", "aiohttp")
"""What the commands that serve HTTP or proxy it need: the ``[shadow]`` extra."""


@dataclass(frozen=True)
class LazyCommand:
    """A command known by name before its module is imported.

    ``target`` is ``"module:attribute"``: a command function, or a :class:`typer.Typer` (a group). ``help`` is
    the first paragraph of its help, as ``ragreplay --help`` lists it (a test checks it against the command's).
    ``needs`` names the modules of optional packages (:data:`ragreplay.errors.EXTRAS`) the command cannot load
    without.
    """

    name: str
    target: str
    help: str
    needs: tuple[str, ...] = ()

    def load(self, prefix: str = "ragreplay") -> _click.Command:
        """Import the module and convert the command as typer would have at registration; a module of
        :attr:`needs` that is not installed is a one-line :class:`~ragreplay.errors.MissingExtraError` naming
        the command (``prefix`` and its name) and the extra to install."""
        for module in self.needs:
            import_extra(module, f"{prefix} {self.name}")
        module_name, _, attribute = self.target.partition(":")
        obj = getattr(importlib.import_module(module_name), attribute)
        holder = typer.Typer(**TYPER_SETTINGS)
        holder.callback()(_no_options)  # a callback makes the holder a group, as the root app is
        if isinstance(obj, typer.Typer):
            holder.add_typer(obj, name=self.name)
        else:
            holder.command(name=self.name)(obj)
        group = typer.main.get_command(holder)
        assert isinstance(group, TyperGroup)
        return group.commands[self.name]


def _no_options() -> None:
    """The holder group's callback; never invoked."""


class LazyGroup(TyperGroup):
    """A :class:`TyperGroup` whose :attr:`lazy_commands` are loaded on first use, after its eager commands."""

    lazy_commands: ClassVar[tuple[LazyCommand, ...]] = ()
    command_path: ClassVar[str] = "ragreplay"
    """How a missing extra's message names this group's commands (``ragreplay shadow`` for a sub-group)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._lazy = {command.name: command for command in self.lazy_commands}

    def list_commands(self, ctx: _click.Context) -> list[str]:
        """The eager commands in their order of registration, then the lazy ones in theirs."""
        return [*self.commands, *(name for name in self._lazy if name not in self.commands)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        """The command, importing its module the first time it is asked for."""
        if cmd_name not in self.commands and cmd_name in self._lazy:
            self.commands[cmd_name] = self._lazy[cmd_name].load(self.command_path)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The commands section of the help, as typer writes it, without loading a lazy command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is None:
                rows.append((name, _click.utils.make_default_short_help(self._lazy[name].help, limit)))
            elif not loaded.hidden:
                rows.append((name, loaded.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        """As typer's, with the lazy commands among the suggestions for a mistyped name."""
        try:
            return self._click_resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:
            matches = (
                get_close_matches(args[0], self.list_commands(ctx)) if self.suggest_commands and args else []
            )
            if matches:
                exc.message = exc.message.rstrip(".") + ". Did you mean {}?".format(
                    ", ".join(f"{match!r}" for match in matches)
                )
            raise
