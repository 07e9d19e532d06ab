"""Where the development data lies (``shared/data``, never copied into the repository), and its real answer pairs.

The folder is looked for beside the checkout (``<repo>/../shared/data``, as laid out for the main checkout and
CI), then at ``$RAGREPLAY_SHARED_DATA`` (a worktree elsewhere, e.g. ``/work/wt/NAME`` with the data at
``/work/shared/data``). Tests that need it skip, saying where they looked, when it is in neither place.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root (this file is ``tests/shared_data.py``)."""
ENV = "RAGREPLAY_SHARED_DATA"
"""The environment variable naming the folder when it is not beside the checkout."""

ANSWER_FIT = (
    "answer-fit-nq301/nq301_human.normalized.jsonl",
    "answer-fit-evouna-nq-dev/evouna_nq_dev.normalized.jsonl",
)
"""The two sets of real (candidate answer, gold answers) rows, relative to the data folder."""


def candidates(root: Path = ROOT) -> list[Path]:
    """Where the data folder is looked for, in order."""
    found = [root.parent / "shared" / "data"]
    if os.environ.get(ENV):
        found.append(Path(os.environ[ENV]))
    return found


def shared_data(root: Path = ROOT) -> Path | None:
    """The data folder, or ``None`` when it is in none of :func:`candidates`."""
    return next((path for path in candidates(root) if path.is_dir()), None)


def require_shared_data(*relative: str) -> Path:
    """The data folder, holding every one of ``relative``; skips the test (saying where it looked) otherwise."""
    import pytest  # here, so that benchmarks/metric_references.py can use this module without pytest

    folder = shared_data()
    if folder is None or not all((folder / r).exists() for r in relative):
        where = " or ".join(str(p) for p in candidates())
        pytest.skip(f"shared data {', '.join(relative) or 'folder'} not found at {where} (set {ENV})")
    return folder


@dataclass(frozen=True)
class AnswerRow:
    """One judged answer: a system's ``candidate`` and the ``references`` (gold answers) it is scored against."""

    source: str
    candidate: str
    references: tuple[str, ...]


def answer_rows(folder: Path) -> list[AnswerRow]:
    """Every row of :data:`ANSWER_FIT` under ``folder``, in file order."""
    rows: list[AnswerRow] = []
    for relative in ANSWER_FIT:
        with (folder / relative).open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    data = json.loads(line)
                    rows.append(
                        AnswerRow(relative.split("/")[0], data["candidate"], tuple(data["reference"]))
                    )
    return rows
