"""`ragreplay eval --format html` (and `eval-report`) in a real headless chromium: the page renders every section
and its charts, loads nothing from elsewhere, logs no console error, and a question that looks like script stays
text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

EVIL = "<script>alert('x')</script>"
ROWS = [
    {
        "id": "q1",
        "question": f"When does the office open? {EVIL}",
        "answer": "The office opens at nine. Parking is free.",
        "reference": "The office opens at nine. It closes at five.",
        "contexts": [{"id": "c1", "text": "The office opens at nine every weekday."}],
        "judgments": {"c1": 2},
        "tags": ["hr", EVIL],
    },
    {
        "id": "q2",
        "question": "Who approves travel?",
        "answer": "Your manager approves travel.",
        "contexts": [],
        "tags": {"dept": "finance"},
    },
]


def _cli(*args: str) -> None:
    """The command in a child process: Playwright's event loop runs in this one while a page is open."""
    done = subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_eval_html_renders_in_chromium_with_nothing_from_elsewhere(page: Any, tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    db, html = str(tmp_path / "eval.db"), tmp_path / "eval.html"
    _cli("eval", str(data), "--judge", "fake:default", "--db", db, "--format", "html", "--output", str(html))
    page.goto(html.as_uri())
    assert page.title().startswith("ragreplay eval run")
    for section in ("metrics", "tags", "undetermined", "rows"):
        assert page.locator(f"#{section}").is_visible(), section
    faithfulness = page.locator('table[data-where="all"] tr[data-metric="faithfulness"]')
    assert faithfulness.locator('[data-field="n"]').inner_text() == "1"
    assert faithfulness.locator('[data-field="undetermined"]').inner_text() == "1"
    assert faithfulness.locator("svg rect").count() == 10
    assert faithfulness.locator("svg").bounding_box()["height"] > 0  # drawn, not just present
    row = page.locator('details[data-row="q1"]')
    row.locator("summary").click()
    assert EVIL in row.locator(".text").first.inner_text()  # the question as written ...
    assert page.evaluate("document.scripts.length") == 0  # ... never a script element
    assert page.problems == []  # no dialog, no console error, no request off the machine

    eval_id = html.read_text(encoding="utf-8").split("eval run ", 1)[1].split(" ", 1)[0]
    again = tmp_path / "again.html"
    _cli("eval-report", eval_id, "--db", db, "--format", "html", "--output", str(again))
    page.goto(again.as_uri())
    assert f"When does the office open? {EVIL}" in page.locator('details[data-row="q1"] summary').inner_text()
    assert page.problems == []
