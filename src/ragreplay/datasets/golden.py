"""Golden sets as the commands use them: save rows as a new version (text made storable first), import a file,
and resolve ``NAME[@version]`` to a stored version and its rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragreplay.core.eval import EvalRow
from ragreplay.core.golden import GoldenRow, GoldenSetRecord, check_name, parse_ref
from ragreplay.core.storable import storable
from ragreplay.errors import ConfigError
from ragreplay.ingest.golden_file import read_golden_file
from ragreplay.store import Store


@dataclass(frozen=True)
class SavedVersion:
    """A save's outcome: the version, whether it is new (``False``: the latest held the same content), and how
    many characters no store keeps were replaced."""

    record: GoldenSetRecord
    created: bool
    replaced_chars: int = 0
    dropped_under_test: int = 0


def storable_rows(rows: list[GoldenRow]) -> tuple[list[GoldenRow], int]:
    """``rows`` with every NUL and lone surrogate replaced (so the hash is of what is stored), and how many."""
    out, total = [], 0
    for row in rows:
        data, n = storable(row.as_json())
        out.append(GoldenRow.model_validate(data) if n else row)
        total += n
    return out, total


def save_rows(store: Store, name: str, rows: list[GoldenRow], recipe: dict[str, Any]) -> SavedVersion:
    """Save ``rows`` as the next version of ``name`` (a no-op when the latest version holds the same rows)."""
    problem = check_name(name)
    if problem is not None:
        raise ConfigError(f"--name: {problem}")
    if not rows:
        raise ConfigError(f"no rows to save as golden set {name}: nothing was written")
    clean, replaced = storable_rows(rows)
    record, created = store.golden.save_version(name, clean, recipe)
    return SavedVersion(record, created, replaced)


def import_file(store: Store, path: Path, name: str) -> SavedVersion:
    """Read ``path`` (JSONL or CSV; every mistake named, nothing written on a bad file) and save it as a
    version of ``name``."""
    problem = check_name(name)
    if problem is not None:
        raise ConfigError(f"--name: {problem}")
    read = read_golden_file(path)
    saved = save_rows(store, name, read.rows, {"source": "import", "file": path.name})
    return SavedVersion(saved.record, saved.created, saved.replaced_chars, read.dropped_under_test)


def resolve(store: Store, ref: str) -> tuple[GoldenSetRecord, list[GoldenRow]]:
    """The version ``ref`` names (``NAME``, ``NAME@vN``, ``NAME@latest``) and its rows; :class:`ConfigError`
    naming the fix when there is none."""
    try:
        name, version = parse_ref(ref)
    except ValueError as exc:
        raise ConfigError(f"golden set {ref!r}: {exc}") from None
    record = store.golden.get_version(name, version)
    if record is None:
        known = sorted({r.ref for r in store.golden.list_versions(name)}) or [
            r.name for r in store.golden.list_versions()
        ]
        hint = f" (known: {', '.join(known[:8])})" if known else ""
        raise ConfigError(
            f"no golden set {ref!r} in {store.url}{hint}. Fix: pick one from `ragreplay golden list`"
        )
    return record, store.golden.load_rows(record.id)


def eval_rows(rows: list[GoldenRow]) -> list[EvalRow]:
    """Golden rows as eval rows without an answer (a target gives it): question, reference, contexts,
    judgments, tags and earlier turns kept."""
    return [
        EvalRow(
            id=r.id,
            question=r.question,
            answer="",
            reference=r.reference,
            contexts=r.contexts,
            judgments=r.judgments,
            tags=r.tags,
            history=r.history,
        )
        for r in rows
    ]
