"""Shell completion (issue 16): `ragreplay --show-completion` prints the script, and the completion protocol
completes command names (lazy ones included) and a command's options."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RAGREPLAY = Path(sys.executable).parent / "ragreplay"


def _complete(words: str, cword: int) -> list[str]:
    env = {
        **os.environ,
        "_RAGREPLAY_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    done = subprocess.run([str(RAGREPLAY)], env=env, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


@pytest.fixture(autouse=True)
def _installed() -> None:
    if not RAGREPLAY.exists() and shutil.which("ragreplay") is None:
        pytest.skip("the ragreplay script is not installed beside this Python: pip install -e .")


def test_show_completion_prints_the_bash_script() -> None:
    done = subprocess.run(
        [str(RAGREPLAY), "--show-completion", "bash"], capture_output=True, text=True, timeout=60, check=True
    )
    assert "complete -o default -F _ragreplay_completion ragreplay" in done.stdout
    assert "_RAGREPLAY_COMPLETE=complete_bash" in done.stdout


def test_command_names_and_options_complete() -> None:
    assert _complete("ragreplay ex", 1) == ["export"]
    assert _complete("ragreplay ru", 1) == ["run", "runs"]
    assert _complete("ragreplay export run_x --for", 3) == ["--format"]
    assert "--format" in _complete("ragreplay runs --", 2)
