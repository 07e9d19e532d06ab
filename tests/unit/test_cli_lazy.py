"""The lazy command table of `ragreplay` (issue 13): what `ragreplay --help` lists without importing a command
is what the commands say once loaded, and every command still loads, runs `--help` and shows its options."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
import typer
from typer import _click
from typer._click.utils import make_default_short_help
from typer.core import TyperOption

from ragreplay.cli.app import COMMANDS, app, main
from ragreplay.cli.lazy import LazyGroup


def _root() -> LazyGroup:
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    return group


def _walk(command: _click.Command, path: list[str]) -> list[tuple[list[str], _click.Command]]:
    """Every command and group under ``command``, loading each (depth first, in listing order)."""
    found = [(path, command)]
    list_commands = getattr(command, "list_commands", None)
    if list_commands is not None:
        ctx = _click.Context(command)
        for name in list_commands(ctx):
            sub = command.get_command(ctx, name)  # type: ignore[attr-defined]
            assert sub is not None, [*path, name]
            found += _walk(sub, [*path, name])
    return found


def test_the_table_help_is_each_commands_own() -> None:
    ctx = _click.Context(_root())
    for lazy in COMMANDS:
        loaded = lazy.load()
        assert not loaded.hidden and not loaded.deprecated and not loaded.short_help, lazy.name
        assert loaded.help is not None
        assert " ".join(loaded.help.split("\n\n")[0].split()) == lazy.help, lazy.name
        for limit in (30, 45, 80, 200):  # the listing at any terminal width
            assert make_default_short_help(lazy.help, limit) == loaded.get_short_help_str(limit), lazy.name
    assert _root().list_commands(ctx) == [lazy.name for lazy in COMMANDS]


def test_root_help_is_the_same_before_and_after_loading_every_command() -> None:
    group = _root()
    ctx = _click.Context(group, info_name="ragreplay")
    lazy_help = group.get_help(ctx)
    assert group.commands == {}, "listing the commands loads none"
    for name in group.list_commands(ctx):
        group.get_command(ctx, name)
    assert set(group.commands) == {lazy.name for lazy in COMMANDS}
    assert group.get_help(ctx) == lazy_help


COMMANDS_BY_PATH = {tuple(path): command for path, command in _walk(_root(), [])}


@pytest.mark.parametrize(
    "path", list(COMMANDS_BY_PATH), ids=[" ".join(p) or "ragreplay" for p in COMMANDS_BY_PATH]
)
def test_every_command_help_exits_0_and_shows_its_options(path: tuple[str, ...]) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*path, "--help"]) == 0
    text = out.getvalue()
    usage = text.splitlines()[0]
    assert usage.startswith("Usage: ") and f" {' '.join(path)} ".replace("  ", " ") in f"{usage} ", usage
    for param in COMMANDS_BY_PATH[path].params:
        if isinstance(param, TyperOption) and not param.hidden:
            assert param.opts[0] in text, (path, param.opts[0])
    assert "--help" in text


def test_a_mistyped_command_still_suggests_the_lazy_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rnu"]) == 2
    assert "Did you mean 'run'" in capsys.readouterr().err


def test_the_shadow_table_help_is_each_commands_own() -> None:
    from ragreplay.cli.shadow_group import SHADOW_COMMANDS

    for lazy in SHADOW_COMMANDS:
        loaded = lazy.load("ragreplay shadow")
        assert loaded.help is not None and not loaded.short_help, lazy.name
        assert " ".join(loaded.help.split("\n\n")[0].split()) == lazy.help, lazy.name
    names = [lazy.name for lazy in SHADOW_COMMANDS]
    assert names == ["serve", "judge", "report", "feedback", "purge", "dashboard", "demo"]
