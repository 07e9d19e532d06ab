"""Small helpers for tests that write input files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    """``text`` (UTF-8) or ``bytes`` written to ``tmp_path / name``."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def jsonl(*objects: Any) -> str:
    """One JSON line per object."""
    return "".join(json.dumps(o) + "\n" for o in objects)
