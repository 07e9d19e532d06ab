"""Golden rows written out: JSONL (the import format, one row a line) or CSV (the documented columns; JSON in
the ``contexts``, ``judgments`` and ``history`` cells, ``tags`` joined by ``|``). Both read back to the same
rows, so exporting and importing a version is a no-op."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from ragreplay.core.golden import GoldenRow
from ragreplay.errors import ConfigError
from ragreplay.ingest.golden_file import GOLDEN_FIELDS, JSON_CELLS

EXPORT_FORMATS = ("jsonl", "csv")


def to_jsonl(rows: Sequence[GoldenRow]) -> str:
    """One JSON object a line."""
    return "".join(json.dumps(r.as_json(), ensure_ascii=False) + "\n" for r in rows)


def to_csv(rows: Sequence[GoldenRow]) -> str:
    """A header line of :data:`~ragreplay.ingest.golden_file.GOLDEN_FIELDS`, then one record a row.

    Tags holding ``|`` are written as a JSON list, so they read back whole."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(GOLDEN_FIELDS)
    for row in rows:
        data = row.as_json()
        cells = []
        for name in GOLDEN_FIELDS:
            value = data.get(name)
            if value is None:
                cells.append("")
            elif name in JSON_CELLS:
                cells.append(json.dumps(value, ensure_ascii=False))
            elif name == "tags":
                joined = any("|" in t or t != t.strip() or t.startswith("[") for t in value)
                cells.append(json.dumps(value, ensure_ascii=False) if joined else "|".join(value))
            else:
                cells.append(str(value))
        writer.writerow(cells)
    return out.getvalue()


def export_rows(rows: Sequence[GoldenRow], fmt: str) -> str:
    """``rows`` in ``fmt`` (``jsonl`` or ``csv``)."""
    if fmt == "csv":
        return to_csv(rows)
    return to_jsonl(rows)


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (written aside, then renamed); :class:`ConfigError` naming
    the path when it cannot be written."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}. Fix: check the path.") from None
