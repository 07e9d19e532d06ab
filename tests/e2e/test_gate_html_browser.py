"""`ragreplay gate --format html` and `gate-report ID --format html` from a real process, opened in a headless
chromium: every chart and mark drawn with a size, the bars' thresholds marked, a question that looks like script
stays text, the collapsed item groups open on a click, no console error and nothing requested off the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gates
from gates import BAD, GOOD, PASSING, make_set, targets
from gates import question as gates_question

sys.path.insert(0, str(Path(__file__).parent))
from test_charts_browser import assert_every_chart_drawn

pytestmark = pytest.mark.browser

EVIL = "<script>alert('x')</script>"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in a child process: Playwright's event loop runs in this one while a page is open."""
    return subprocess.run(
        [sys.executable, "-m", "ragreplay.cli.app", *args], capture_output=True, text=True, timeout=120
    )


def test_the_gate_page_renders_in_chromium_with_nothing_from_elsewhere(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gates, "question", lambda stratum, i: f"{gates_question(stratum, i)} {EVIL}")
    db = str(tmp_path / "gate.db")
    plan = {**PASSING, "win": [(GOOD, BAD), *PASSING["win"][1:]]}  # one win lost: a fail, listed
    champion, challenger = targets(tmp_path, make_set(db, plan))
    html = tmp_path / "gate.html"
    args = ["--champion", str(champion), "--challenger", str(challenger), "--judge", "fake:default"]
    done = _cli("gate", *args, "--db", db, "--format", "html", "--output", str(html))
    assert done.returncode == 1, done.stderr  # fail, whatever the format
    page.goto(html.as_uri())
    assert page.title().startswith("ragreplay gate")
    assert page.locator("h1.decision").get_attribute("data-decision") == "fail"
    assert_every_chart_drawn(page, 5)  # bars, strata, wound scores, latency, cost (no failure tags here)
    ticks = page.locator("#chart-bars line.threshold")
    assert ticks.count() == 3
    assert all(ticks.nth(i).bounding_box()["height"] > 0 for i in range(3))  # the thresholds are drawn
    assert page.locator('details[data-listed="wins"] li').count() == 1
    group = page.locator('details[data-group="win: lost"]')
    assert not group.locator(".case").first.is_visible()  # collapsed
    group.locator("summary").first.click()
    assert group.locator(".case").first.is_visible()
    assert f"{gates_question('win', 0)} {EVIL}" in group.locator(".case").first.inner_text()  # text ...
    assert page.evaluate("document.scripts.length") == 0  # ... never a script element
    assert page.problems == []

    gate_id = html.read_text(encoding="utf-8").split("ragreplay gate ", 1)[1].split(":", 1)[0]
    again = _cli("gate-report", gate_id, "--db", db, "--format", "html")
    assert again.returncode == 1 and again.stdout.startswith("<!doctype html>"), again.stderr
    (tmp_path / "again.html").write_text(again.stdout, encoding="utf-8")
    page.goto((tmp_path / "again.html").as_uri())
    assert_every_chart_drawn(page, 5)
    assert page.problems == []
