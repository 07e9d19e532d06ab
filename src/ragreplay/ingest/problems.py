"""Problem collection and streamed, line-numbered reading of input files."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragreplay.errors import InputError, InputProblem

#: How many problems are reported in detail before reading stops.
MAX_PROBLEMS = 20

#: ``(bytes_read, total_bytes)``, called now and then while a file is read.
ProgressFn = Callable[[int, int], None]

#: What a folder's files' lines are apart: the i-th file's line n is the folder's line i * PART_STRIDE + n.
PART_STRIDE = 1_000_000_000

_PROGRESS_EVERY = 1 << 16  # bytes between progress callbacks


class ProblemLog:
    """The problems found in one file: the first ``limit`` in detail, then a count.

    Reading stops (``stopped`` turns true) at the first problem beyond the limit, so a file that is wrong on
    every line fails fast; ``more`` then counts the problems found beyond the limit before reading stopped.
    """

    def __init__(self, file: str, limit: int = MAX_PROBLEMS) -> None:
        self.file = file
        self.limit = limit
        self.problems: list[InputProblem] = []
        self.more = 0
        self._parts: list[str] = []
        self._reading: int | None = None

    def begin_part(self, file: str) -> int:
        """Start reading ``file`` as the next of a folder's files; returns the number added to its lines to make
        them the folder's lines (:data:`PART_STRIDE` times its index). While it is read, a problem's line is its
        own; once :meth:`end_parts` is called, a line is the folder's, and names its file and line within it."""
        self._parts.append(file)
        self._reading = len(self._parts) - 1
        return self._reading * PART_STRIDE

    def end_parts(self) -> None:
        """Every file of the folder is read: lines are the folder's from now on."""
        self._reading = None

    def _locate(self, line: int | None) -> tuple[str, int | None]:
        if not self._parts:
            return self.file, line
        if self._reading is not None and (line is None or line < PART_STRIDE):
            return self._parts[self._reading], line
        if line is None:
            return self.file, None
        part, local = divmod(line, PART_STRIDE)
        return (self._parts[part], local) if part < len(self._parts) else (self.file, line)

    def where(self, line: int | None) -> str:
        """``file:line`` of a line as the readers number it (a folder's line names its file)."""
        file, local = self._locate(line)
        return file if local is None else f"{file}:{local}"

    def add(self, line: int | None, field: str | None, message: str, fix: str = "") -> None:
        """Record one problem at ``line`` (1-based) and ``field`` (a dotted path or a column name)."""
        if len(self.problems) < self.limit:
            file, line = self._locate(line)
            self.problems.append(InputProblem(file, line, field, message, fix))
        else:
            self.more += 1

    @property
    def stopped(self) -> bool:
        """True once more problems than the limit were found: stop reading."""
        return self.more > 0

    def __len__(self) -> int:
        return len(self.problems) + self.more

    def error(self) -> InputError:
        """An :class:`InputError` listing the problems in file order."""
        ordered = sorted(self.problems, key=lambda p: (p.file, -1 if p.line is None else p.line))
        return InputError(ordered, self.more)

    def raise_if_any(self) -> None:
        """Raise :class:`InputError` if any problem was recorded."""
        if self.problems:
            raise self.error()


@dataclass
class Record:
    """The problems of one record (a line, a row, a conversation) as they are recorded."""

    problems: ProblemLog
    line: int | None
    count: int = 0

    def problem(self, field: str | None, message: str, fix: str = "") -> None:
        """Record a problem at this record's line."""
        self.problems.add(self.line, field, message, fix)
        self.count += 1

    @property
    def ok(self) -> bool:
        """True while no problem was recorded for this record."""
        return self.count == 0


def not_found(path: Path) -> InputError:
    """The error for a path that cannot be opened as a file."""
    if path.is_dir():
        return InputError([InputProblem(str(path), None, None, "is a directory", "pass a log file")])
    return InputError(
        [
            InputProblem(
                str(path), None, None, "file not found", "check the path (relative to the current directory)"
            )
        ]
    )


def open_binary(path: Path) -> io.BufferedReader:
    """Open ``path`` for reading bytes, turning OS errors into :class:`InputError`."""
    try:
        return path.open("rb")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise not_found(path) from None
    except PermissionError:
        raise InputError(
            [
                InputProblem(
                    str(path),
                    None,
                    None,
                    "cannot be read (permission denied)",
                    "check the file's permissions",
                )
            ]
        ) from None


class LineSource:
    """A file's lines as text, numbered from 1, read as a stream (memory stays flat whatever the file size).

    Lines keep their line ending. A line that is not valid UTF-8 is recorded as a problem and then skipped
    (``bad_bytes="skip"``) or decoded with replacement characters (``"replace"``, so a CSV parser keeps its
    place). A UTF-8 byte-order mark on the first line is dropped. ``progress`` gets the bytes read so far.
    """

    def __init__(
        self,
        path: Path,
        problems: ProblemLog,
        progress: Callable[[int], None] | None = None,
        bad_bytes: Literal["skip", "replace"] = "skip",
    ) -> None:
        self.path = path
        self.problems = problems
        self.progress = progress
        self.bad_bytes = bad_bytes
        self.bytes_read = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        report_at = _PROGRESS_EVERY
        with open_binary(self.path) as fh:
            for line_no, raw in enumerate(fh, start=1):
                self.bytes_read += len(raw)
                if self.progress is not None and self.bytes_read >= report_at:
                    self.progress(self.bytes_read)
                    report_at = self.bytes_read + _PROGRESS_EVERY
                if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self.problems.add(
                        line_no,
                        None,
                        f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                        "save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 in.jsonl > out.jsonl`",
                    )
                    if self.bad_bytes == "skip":
                        continue
                    text = raw.decode("utf-8", errors="replace")
                yield line_no, text
        if self.progress is not None:
            self.progress(self.bytes_read)
