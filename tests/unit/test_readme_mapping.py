"""The README's field mapping example works as written on flat rows (CSV, JSONL) and canonical logs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from files import jsonl, write
from ragreplay.core.types import Feedback
from ragreplay.ingest import iter_file_cases
from ragreplay.ingest.mapping import FieldMapping

README = Path(__file__).resolve().parents[2] / "README.md"

FLAT_CSV = (
    "session,speaker,content,rating\n"
    "s1,user,How long is parental leave?,\n"
    "s1,assistant,Sixteen weeks.,5\n"
    "s2,user,Who approves leave?,\n"
    "s2,assistant,Your manager.,meh\n"
    "s3,user,Is there a bonus?,\n"
    "s3,assistant,No.,2\n"
)
ROWS: list[dict[str, object]] = [
    {"session": "s1", "speaker": "user", "content": "How long is parental leave?"},
    {"session": "s1", "speaker": "assistant", "content": "Sixteen weeks.", "rating": 5},
    {"session": "s2", "speaker": "user", "content": "Who approves leave?"},
    {"session": "s2", "speaker": "assistant", "content": "Your manager.", "rating": "meh"},
    {"session": "s3", "speaker": "user", "content": "Is there a bonus?"},
    {"session": "s3", "speaker": "assistant", "content": "No.", "rating": 2},
]


def readme_mapping(tmp_path: Path) -> FieldMapping:
    """The README's ``mapping.yaml`` block, written to a file and read as the CLI reads it."""
    (block,) = re.findall(
        r"^```yaml\n(# mapping\.yaml.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M
    )
    return FieldMapping.from_yaml(write(tmp_path, "mapping.yaml", block))


def _conversations(tmp_path: Path, log: str, text: str) -> dict[str, Feedback | None]:
    path = write(tmp_path, log, text)
    return {c.conversation_id: c.feedback for c in iter_file_cases(path, None, readme_mapping(tmp_path))}


@pytest.mark.parametrize(
    ("log", "text"),
    [
        ("logs.csv", FLAT_CSV),
        ("flat.jsonl", jsonl(*ROWS)),
        (
            "canonical.jsonl",
            jsonl(
                *(
                    {"session": s, "messages": [{k: v for k, v in r.items() if k != "session"} for r in rows]}
                    for s, rows in (("s1", ROWS[0:2]), ("s2", ROWS[2:4]), ("s3", ROWS[4:6]))
                )
            ),
        ),
    ],
)
def test_the_readme_mapping_reads_every_format(tmp_path: Path, log: str, text: str) -> None:
    assert _conversations(tmp_path, log, text) == {
        "s1": Feedback.GOOD,
        "s2": Feedback.BAD,
        "s3": Feedback.BAD,
    }
