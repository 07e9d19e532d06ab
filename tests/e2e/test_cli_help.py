"""`ragreplay --version`, and defaults visible in every command's --help."""

from __future__ import annotations

import pytest

from ragreplay import __version__
from ragreplay.cli.app import main


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return " ".join(capsys.readouterr().out.split())  # help wraps at the terminal's width


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _out(["--version"], capsys) == f"ragreplay {__version__}"


@pytest.mark.parametrize(
    ("argv", "defaults"),
    [
        (["run", "--help"], ["[default: ragreplay.db]", "[default: 16]", "[default: judge]"]),
        (["shadow", "serve", "--help"], ["[default: 0.15]", "[default: 8787]"]),
        (["report", "--help"], ["[default: text]"]),
    ],
)
def test_help_shows_the_defaults(
    argv: list[str], defaults: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _out(argv, capsys)
    for default in defaults:
        assert default in text, default


def test_root_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(_out(["--help"], capsys).split())
    assert "Exit codes: 0 done" in text and "75 the store stopped answering" in text
