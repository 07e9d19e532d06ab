"""The shadow dashboard in a real headless chromium against a real server: the headline numbers are the
report's, a user can filter, page and open a row by clicking, and no page runs user text, logs a console error
or loads anything from off the machine."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragreplay.asgi.serving import serve_in_thread
from ragreplay.shadow.judging import parse_since, stored_shadow_summary
from ragreplay.store import Store
from ragreplay.web import create_app

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))
from test_dashboard import CHUNK, LONG_CHUNK, SCRIPT, seed_rows  # the in-process tests' data

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    from ragreplay.cli.app import main

    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'shadow.db'}"
    store = Store.open(url)
    store.shadow_rows.write_shadow_rows(seed_rows())
    assert main(["shadow", "judge", "--db", url, "--judge", "fake:default", "--since", "30d"]) == 0
    with serve_in_thread(create_app(url, cache_s=0)) as base:
        yield base, store
    store.close()


def test_headline_cards_show_the_reports_numbers(served: tuple[str, Store], page: Any) -> None:
    base, store = served
    page.goto(base + "/")
    summary = stored_shadow_summary(store, parse_since("7d"))
    for challenger in summary.challengers:
        card = page.locator(f'#headline [data-challenger="{challenger.name}"]')
        assert card.is_visible()
        assert float(card.get_attribute("data-agreement")) == pytest.approx(challenger.agreement.value)
        assert float(card.get_attribute("data-preference")) == pytest.approx(
            challenger.preference_disagreements.share
        )
    assert page.locator("#grid").is_visible() and page.locator("#by-tag").is_visible()
    assert page.locator("#by-day tr[data-day]").count() > 0
    assert page.problems == []


def test_a_user_narrows_the_window_pages_through_rows_and_opens_one(
    served: tuple[str, Store], page: Any
) -> None:
    base, _ = served
    page.goto(base + "/")
    page.fill('input[name="since"]', "24h")
    page.click('form.filters button[type="submit"]')
    page.wait_for_url("**/?since=24h*")
    assert "since 24h" in page.locator("h1").inner_text()

    page.goto(base + "/rows?limit=5")
    seen: list[str] = []
    for _ in range(20):
        ids = page.locator("#rows tr.row").evaluate_all("rows => rows.map(r => r.dataset.rowId)")
        seen += ids
        if page.locator("a.next").count() == 0:
            break
        page.click("a.next")
        page.wait_for_load_state()
    assert len(seen) == len(set(seen)) >= 20  # every row once, across pages

    page.goto(base + "/rows")
    page.locator('#rows tr.row[data-row-id="script"] a').first.click()
    page.wait_for_selector("#row-detail")
    assert page.locator("#row-detail").get_attribute("data-row-id") == "script"
    assert SCRIPT in page.locator("#question").inner_text()  # shown as text
    champion_chunk = page.locator('[data-side="champion"] .chunk')
    assert champion_chunk.inner_text().startswith("docscript#1") and CHUNK in champion_chunk.inner_text()
    assert page.evaluate("document.scripts.length") == 0  # the dashboard has no script, and made none
    assert page.problems == []


def test_a_long_chunk_text_is_folded_until_opened(served: tuple[str, Store], page: Any) -> None:
    base, _ = served
    page.goto(base + "/rows/long")
    folded = page.locator('[data-side="challenger"] .chunk details')
    assert folded.count() == 1 and folded.get_attribute("open") is None
    whole = folded.locator(".text")
    assert not whole.is_visible()
    folded.locator("summary").click()
    assert whole.is_visible() and whole.inner_text() == LONG_CHUNK
    assert "text not kept" in page.locator('[data-side="champion"] .chunk').inner_text()  # an ids-only side
    assert page.problems == []
