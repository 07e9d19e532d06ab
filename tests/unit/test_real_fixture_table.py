"""docs/importers.md's table of real files is what the importers read from them now (scripts/real_fixture_table.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _table_module() -> object:
    spec = importlib.util.spec_from_file_location(
        "real_fixture_table", ROOT / "scripts" / "real_fixture_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_real_input_is_listed_and_the_docs_hold_the_measured_table() -> None:
    module = _table_module()
    listed = {path.relative_to(module.REAL).as_posix() for path in module.inputs()}  # type: ignore[attr-defined]
    assert listed == set(module.INPUTS)  # type: ignore[attr-defined]
    table = module.table()  # type: ignore[attr-defined]
    assert table in (ROOT / "docs" / "importers.md").read_text(encoding="utf-8")
    for tool in ("Langfuse", "LangSmith", "Phoenix / OpenInference", "OpenTelemetry GenAI"):
        rows = [line.split("|") for line in table.splitlines() if line.startswith(f"| {tool} |")]
        assert len(rows) >= 5, tool
        assert any(int(row[7]) + int(row[8]) > 0 for row in rows), f"{tool}: no file with user feedback"
