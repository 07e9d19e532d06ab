"""Read a plain text file of questions, one per line (blank lines and lines starting with ``#`` skipped).

Every problem (a line that is not UTF-8, a question over the size limit, too many questions) is reported with
its file and line and the fix; nothing is returned unless the whole file is right.
"""

from __future__ import annotations

from pathlib import Path

from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.problems import LineSource, ProblemLog

MAX_QUESTION_CHARS = 4000
MAX_QUESTIONS = 100_000


def read_query_lines(
    path: Path, max_chars: int = MAX_QUESTION_CHARS, max_questions: int = MAX_QUESTIONS
) -> list[tuple[int, str]]:
    """``(line number, question)`` of every question in the file at ``path``, in order."""
    problems = ProblemLog(str(path))
    found: list[tuple[int, str]] = []
    for line_no, raw in LineSource(path, problems):
        if problems.stopped:
            break
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if len(text) > max_chars:
            problems.add(
                line_no,
                None,
                f"the question has {len(text)} characters, over the limit of {max_chars}",
                "shorten it, or split the file into one question per line",
            )
            continue
        if len(found) >= max_questions:
            problems.add(line_no, None, f"more than {max_questions} questions", "split the file")
            break
        found.append((line_no, text))
    problems.raise_if_any()
    if not found:
        fix = "write one question per line"
        raise InputError([InputProblem(str(path), None, None, "holds no question", fix)])
    return found
