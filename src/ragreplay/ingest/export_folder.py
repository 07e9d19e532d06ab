"""A folder of export files read as one export: Langfuse's blob-storage export (one JSONL per table), LangSmith's
bulk export (Parquet parts), a folder of saved API pages.

The files are read in the order of their paths (subfolders included, hidden files and other suffixes left out),
as if concatenated; a problem names the file and its line within it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.problems import open_binary

#: Suffixes of the files a folder's export is read from.
EXPORT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".parquet", ".pq", ".csv", ".tsv")
#: The most files read from one folder.
MAX_FOLDER_FILES = 10_000


def export_files(folder: Path) -> list[Path]:
    """The export files under ``folder`` in path order; a folder with none, or too many, is an input error."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in EXPORT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        fix = f"put the export's {', '.join(EXPORT_SUFFIXES)} files in it, or pass one file"
        raise InputError([InputProblem(str(folder), None, None, "the folder holds no export file", fix)])
    if len(files) > MAX_FOLDER_FILES:
        fix = "ingest a shorter time window (one subfolder at a time)"
        raise InputError(
            [
                InputProblem(
                    str(folder), None, None, f"more than {MAX_FOLDER_FILES:,} files in the folder", fix
                )
            ]
        )
    return files


def content_digest(path: Path) -> str:
    """SHA-256 hex of a file's bytes, or of a folder's export files (each one's relative path and bytes)."""
    digest = hashlib.sha256()
    files = export_files(path) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open_binary(file) as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of a file, or of each of a folder's export files: what changes when
    the input is rewritten while it is read."""
    files = export_files(path) if path.is_dir() else [path]
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)


def total_bytes(path: Path) -> int:
    """The size of a file, or of a folder's export files together."""
    return sum(size for _, size, _ in signature(path))
