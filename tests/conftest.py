"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ragreplay.store import Store

# No test may reach a real model endpoint: building any non-fake provider from the environment fails.
# Tests that talk to the loopback mock server pass their own env to ModelFactory.
os.environ["RAGREPLAY_BLOCK_REAL_MODELS"] = "1"
# Embedding caches go to a folder of this test session, not the user's home.
os.environ["RAGREPLAY_CACHE_DIR"] = tempfile.mkdtemp(prefix="ragreplay-test-cache-")

# The PostgreSQL server the store tests use; each test gets its own schema on it.
POSTGRES_URL = os.environ.get("RAGREPLAY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@functools.cache
def _postgres_unreachable() -> str | None:
    """Why the test PostgreSQL server cannot be used, or ``None`` when it can (checked once per session)."""
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


def _postgres_schema_url(schema: str) -> str:
    sep = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a fresh, empty store: a temporary SQLite file, or a new schema on the test PostgreSQL server.

    Without a reachable PostgreSQL server the PostgreSQL variant is skipped, unless the CI environment
    variable is set, where it fails.
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"
        return
    problem = _postgres_unreachable()
    if problem is not None:
        message = (
            f"PostgreSQL is not reachable at {POSTGRES_URL} ({problem}); set RAGREPLAY_TEST_POSTGRES_URL"
        )
        if _ci():
            pytest.fail(f"{message}. CI is set, so the PostgreSQL store tests must run.")
        pytest.skip(message)
    schema = f"rr_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _postgres_schema_url(schema)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An open, empty store on each backend of :func:`store_url`; closed after the test."""
    opened = Store.open(store_url)
    try:
        yield opened
    finally:
        opened.close()


# The browser the UI tests drive: Debian's chromium (apt-get install chromium), never a downloaded one.
CHROMIUM = (
    os.environ.get("RAGREPLAY_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium driven by Playwright, for the tests of one module.

    Module scope, not session: Playwright's sync API keeps an event loop running in the main thread while it
    is open, which would break every later ``asyncio.run`` of other modules.

    Without chromium or Playwright the browser tests are skipped with the reason, unless CI is set, where
    they fail (`.ci/run` installs chromium when it is missing).
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem: str | None = "Playwright is not installed (pip install -e '.[dev]')"
    else:
        problem = None if CHROMIUM else "no chromium on PATH (Debian: apt-get install chromium)"
    if problem is not None:
        if _ci():
            pytest.fail(f"{problem}. CI is set, so the browser tests must run.")
        pytest.skip(problem)
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that fails the test on any request leaving 127.0.0.1 / file:// and records console
    errors and dialogs (``page.problems``)."""
    context = browser.new_context()
    opened = context.new_page()
    problems: list[str] = []
    opened.on(
        "console",
        lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
    )
    opened.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    opened.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))

    def local_only(route: Any) -> None:
        url = route.request.url
        if url.startswith(("file://", "http://127.0.0.1", "data:", "about:")):
            route.continue_()
        else:
            problems.append(f"request left the machine: {url}")
            route.abort()

    opened.route("**/*", local_only)
    opened.problems = problems
    try:
        yield opened
    finally:
        context.close()
