"""The replay HTML report in a real headless chromium: it renders every section, loads nothing from elsewhere,
and user text that looks like script stays text."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ragreplay.report import render

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_html_report import EVIL, _summary

pytestmark = pytest.mark.browser


def test_report_renders_in_chromium_without_running_injected_script(page: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(render(_summary(), "html"), encoding="utf-8")
    page.goto(report.as_uri())
    assert page.title().startswith("ragreplay")
    for section in ("verdicts", "rates", "tags", "cases"):
        assert page.locator(f"#{section}").is_visible(), section
    assert page.locator('td[data-verdict="BAD_NO_FIT"]').inner_text() == "1"
    assert page.locator('td[data-verdict="GOOD_FIT"]').inner_text() == "1"
    group = page.locator('details[data-group="BAD_NO_FIT"]')  # cases sit in collapsed verdict groups
    group.locator("summary").first.click()
    group.locator("details.sub summary").first.click()
    case = page.locator('[data-case="case_1"]')
    assert EVIL in case.inner_text()  # shown as the text the user wrote ...
    assert page.evaluate("document.scripts.length") == 0  # ... never turned into a script element
    assert page.problems == []  # no dialog, no console error, no request off the machine
