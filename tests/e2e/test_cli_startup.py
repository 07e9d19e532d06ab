"""`ragreplay --help` and `--version` import no command module, so none of the heavy libraries (issue 13).

Each probe runs the CLI entry point in a fresh interpreter and lists the heavy modules loaded after it; not a
timing test (the figures are in docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

HEAVY = (
    "sqlalchemy",
    "httpx",
    "aiohttp",
    "uvicorn",
    "numpy",
    "starlette",
    "jinja2",
    "pydantic",
    "bm25s",
    "py3langid",
)

PROBE = """
import contextlib, io, json, sys
argv, watched = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
from ragreplay.cli.app import main
sys.argv = ["ragreplay", *argv]
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(argv)
heavy = sorted({m.split(".")[0] for m in sys.modules} & watched)
ours = sorted(m for m in sys.modules if m.startswith("ragreplay."))
print(json.dumps({"code": code, "out": out.getvalue(), "heavy": heavy, "ours": ours}))
"""


def _probe(argv: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []], ids=["help", "version", "no-args"])
def test_root_imports_no_heavy_library(argv: list[str]) -> None:
    result = _probe(argv)
    assert result["code"] == (2 if not argv else 0)
    assert result["heavy"] == []
    commands = [m for m in result["ours"] if m.endswith("_cmd")]
    assert commands == [], "no command module is imported to list the commands"


def test_root_help_still_lists_every_command() -> None:
    out = _probe(["--help"])["out"]
    for name in ("ingest", "run", "report", "compare", "gate", "gate-demo", "shadow", "regset", "review"):
        assert f"\n  {name} " in out, name
    assert "Replay labelled cases through a candidate" in out and "Exit codes: 0 done" in out


def test_one_command_imports_only_its_own_module() -> None:
    result = _probe(["schema", "--help"])
    assert result["code"] == 0
    commands = [m for m in result["ours"] if m.endswith("_cmd")]
    assert commands == ["ragreplay.cli.schema_cmd"]
    assert "uvicorn" not in result["heavy"]  # only the commands that serve import the server


def test_a_run_imports_neither_httpx_nor_numpy_before_its_first_case() -> None:
    """The run command's chain (targets/loader, the store, the engine) imports the HTTP target's httpx and the
    regression set's numpy only when a target or a feature uses them."""
    result = _probe(["run", "--help"])
    assert result["code"] == 0
    assert "ragreplay.targets.loader" in result["ours"] and "ragreplay.store" in result["ours"]
    assert "httpx" not in result["heavy"] and "numpy" not in result["heavy"]
