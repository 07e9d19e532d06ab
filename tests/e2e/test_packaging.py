"""Packaging (issue 16): `python -m ragreplay`, the wheel's contents, and the base install (no extra) running
ingest, replay and the listings on SQLite, simulated by an import hook that hides every extra's module."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragreplay import __version__
from ragreplay.errors import EXTRAS

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "src" / "ragreplay" / "demo" / "data"

BASE_INSTALL = """
import importlib.abc, json, sys
hidden = set(json.loads(sys.argv[1]))

class HideExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HideExtras())
from ragreplay.cli.app import main
sys.exit(main(sys.argv[2:]))
"""


def _base_install(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BASE_INSTALL, json.dumps(sorted(EXTRAS)), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_python_m_ragreplay_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragreplay", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == f"ragreplay {__version__}"


@pytest.mark.slow
def test_the_base_install_ingests_replays_and_lists_on_sqlite(tmp_path: Path) -> None:
    db = str(tmp_path / "light.db")
    ingest = _base_install("ingest", str(DEMO / "production.jsonl"), "--db", db, cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    run = _base_install(
        "run", "--target", str(DEMO / "challenger.yaml"), "--judge", "local", "--limit", "6", "--db", db,
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    runs = _base_install("runs", "--db", db, "--format", "json", cwd=tmp_path)
    assert runs.returncode == 0, runs.stderr
    assert json.loads(runs.stdout)[0]["done"] == 6
    shadow = _base_install("shadow", "serve", "--help", cwd=tmp_path)
    assert shadow.returncode == 2
    assert shadow.stderr.count("\n") == 1 and "pip install 'ragreplay[shadow]'" in shadow.stderr


def test_the_wheel_has_py_typed_and_license_and_no_build_only_demo_files(tmp_path: Path) -> None:
    if importlib.util.find_spec("build") is None or importlib.util.find_spec("hatchling") is None:
        pytest.skip("building the wheel needs the dev extra's build and hatchling: pip install -e '.[dev]'")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        timeout=300,
        check=True,
    )
    (wheel,) = tmp_path.glob("ragreplay-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ragreplay/py.typed" in names
    assert "ragreplay/__main__.py" in names
    assert f"ragreplay-{__version__}.dist-info/licenses/LICENSE" in names
    # the demo's data stays: the demo reads it at run time
    for kept in ("production.jsonl", "ground_truth.jsonl", "champion.yaml", "challenger.yaml"):
        assert f"ragreplay/demo/data/{kept}" in names, kept
    assert any(name.startswith("ragreplay/demo/data/corpus/") for name in names)
    # what only regenerates that data does not
    assert "ragreplay/demo/build_log.py" not in names
    assert "ragreplay/demo/data/conversations.yaml" not in names
    assert not [name for name in names if "__pycache__" in name]
