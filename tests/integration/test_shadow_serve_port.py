"""`shadow serve` and `shadow dashboard` on a busy port: one clear error, exit 2, no banner, no traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "command",
    [
        ["shadow", "serve", "--champion", "http://127.0.0.1:9"],
        ["shadow", "serve", "--champion", "http://127.0.0.1:9", "--challenger", "b=http://127.0.0.1:9"],
        ["shadow", "dashboard"],
    ],
    ids=["forward-only", "with-challenger", "dashboard"],
)
def test_a_busy_port_is_a_clear_error_before_any_banner(command: list[str], tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "ragreplay.cli.app", *command, "--port", str(port), "--db", "s.db"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "choose another --port" in done.stderr
    assert "shadow proxy on" not in done.stderr and "Traceback" not in done.stderr
