"""`ragreplay shadow purge --older-than 90d`: delete old live traffic from the store (retention)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from ragreplay.cli.common import ConfigOption, DbOption, err_console, open_store, settings_from
from ragreplay.errors import ConfigError
from ragreplay.shadow.judging import parse_since
from ragreplay.store import StoreError
from ragreplay.store.connect import parse_store_url
from ragreplay.store.shadow_purge import PurgeCounts

MIN_AGE = timedelta(hours=1)
"""A cutoff newer than this is probably a typo (``90m`` for ``90d``): it needs ``--force``."""


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_cutoff(older_than: str, now: datetime) -> datetime:
    """The cutoff of ``--older-than``: an age (``90d``, ``24h``, ``30m``) before ``now``, or an ISO date."""
    try:
        # An age counts back from ``now`` in whole seconds, so the printed cutoff is the exact one.
        return parse_since(older_than, now.replace(microsecond=0))
    except ConfigError:
        raise ConfigError(
            f"--older-than {older_than!r} is not an age or a date. "
            "Fix: use e.g. 90d, 24h, 30m or an ISO date such as 2026-01-01 (rows before it are purged)"
        ) from None


def check_cutoff(older_than: str, cutoff: datetime, now: datetime) -> None:
    """Refuse a cutoff in the future or less than :data:`MIN_AGE` ago: most likely a mistake."""
    if cutoff > now:
        raise ConfigError(
            f"--older-than {older_than!r} is in the future ({_iso(cutoff)}): it would purge every shadow row, "
            "including traffic logged seconds ago. Fix: give an age such as 90d or a past date, or add --force "
            "to purge everything up to that date."
        )
    if cutoff > now - MIN_AGE:
        raise ConfigError(
            f"--older-than {older_than!r} keeps less than 1 hour of shadow traffic (cutoff {_iso(cutoff)}), "
            "probably a mistake (90m for 90d?). Fix: give an age of at least 1h, such as 90d, or add --force."
        )


def counts_text(counts: PurgeCounts) -> str:
    """``N shadow row(s), J judgment(s), F feedback label(s)``."""
    return f"{counts.rows} shadow row(s), {counts.judgments} judgment(s), {counts.feedback} feedback label(s)"


def _refuse_missing_file(url: str) -> None:
    """A SQLite path that does not exist is a typo here: opening it would create an empty store."""
    engine_url, display = parse_store_url(url)
    path = engine_url.database if engine_url.get_backend_name() == "sqlite" else None
    if path and not Path(path).exists():
        raise StoreError(f"There is no store at {display}: nothing to purge. Fix: check --db.")


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def purge(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Purge what is older than this age (90d, 24h, 30m) or logged before this ISO date",
        ),
    ],
    db: DbOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; delete nothing")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Purge without asking for confirmation")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Allow a cutoff in the future or less than 1 hour ago")
    ] = False,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum",
            help="SQLite: VACUUM afterwards to return the freed space to the OS (PostgreSQL: autovacuum)",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Delete shadow rows older than the cutoff, their judgments, and old feedback labels whose request has no
    shadow row left (labels of requests whose rows are kept stay). One transaction: all or nothing. Asks for
    confirmation on a terminal; elsewhere needs --yes."""
    now = datetime.now(UTC)
    cutoff = parse_cutoff(older_than, now)
    if not force:
        check_cutoff(older_than, cutoff, now)
    settings = settings_from(config, db=db)
    _refuse_missing_file(settings.db)
    with open_store(settings.db) as store:
        planned = store.shadow_purge.count_shadow_purge(cutoff)
        what = f"{counts_text(planned)} older than {_iso(cutoff)}"
        if dry_run:
            _say(f"would purge {what} from {store.url}; dry run: nothing deleted")
            return
        if planned.total and not yes:
            if not sys.stdin.isatty():
                raise ConfigError(
                    f"refusing to purge {what} from {store.url} without confirmation: stdin is not a "
                    "terminal. Fix: add --yes (or --dry-run to only count)."
                )
            if not typer.confirm(f"Permanently delete {what} from {store.url}?", default=False, err=True):
                _say("aborted: nothing purged")
                raise typer.Exit(1)
        done = store.shadow_purge.purge_shadow_before(cutoff)
        _say(f"purged {counts_text(done)} older than {_iso(cutoff)}")
        if vacuum:
            space = store.shadow_purge.reclaim_space()
            if space is None:
                _say("--vacuum: nothing to do on PostgreSQL (autovacuum makes the freed space reusable)")
            else:
                _say(f"VACUUM: store file {_megabytes(space.before)} -> {_megabytes(space.after)}")


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)
