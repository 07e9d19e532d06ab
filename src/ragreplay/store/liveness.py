"""A store that stops answering ends the command with a named error, in bounded time, instead of a hang or a
traceback.

PostgreSQL connections get a connect timeout, TCP keepalives and ``tcp_user_timeout`` (a dead peer or a cut
network is noticed), a server-side ``statement_timeout``, and a client-side deadline on every answer: a server
that is up but silent (a hung server or pooler, a stalled disk) is noticed by nothing else. A connection lost or
silent past its deadline, a statement cancelled by the timeout, or a SQLite database locked past its busy timeout
becomes :class:`StoreUnavailable`. Any libpq parameter in the store URL's query wins over these defaults.
The deadline itself is :mod:`ragreplay.store.pg_deadline` (psycopg, the ``[postgres]`` extra, is imported only
for a PostgreSQL store).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL, ExceptionContext

from ragreplay.store.failures import StoreError, StoreUnavailable

TIMEOUT_ENV = "RAGREPLAY_DB_TIMEOUT_S"
CONNECT_TIMEOUT_ENV = "RAGREPLAY_DB_CONNECT_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
# A silent peer is noticed after about idle + interval * count seconds; unacknowledged data after the user timeout.
TCP_SETTINGS: dict[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}
_GRACE_S = 10.0
_STATEMENT_TIMEOUT = re.compile(r"statement_timeout\s*=\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h)?", re.IGNORECASE)
_UNITS_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}
_QUERY_CANCELED = "57014"


@dataclass(frozen=True)
class StoreTimeouts:
    """How long the store may take: each statement (``statement_s``; 0: no limit) and each connect."""

    statement_s: float = DEFAULT_TIMEOUT_S
    connect_s: float = DEFAULT_CONNECT_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> StoreTimeouts:
        """``$RAGREPLAY_DB_TIMEOUT_S`` and ``$RAGREPLAY_DB_CONNECT_TIMEOUT_S`` over the defaults."""
        return cls(
            statement_s=_seconds(env, TIMEOUT_ENV, DEFAULT_TIMEOUT_S, allow_zero=True),
            connect_s=_seconds(env, CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT_S, allow_zero=False),
        )

    def answer_deadline_s(self) -> float | None:
        """How long the client waits for any answer: the statement timeout and a grace for the server to
        cancel it itself (``None``: no limit)."""
        return self.statement_s + min(_GRACE_S, self.statement_s) if self.statement_s > 0 else None


def _seconds(env: Mapping[str, str], name: str, default: float, *, allow_zero: bool) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        least = "0 (no limit) or more" if allow_zero else "more than 0"
        raise StoreError(
            f"${name}={raw!r} is not a number of seconds. Fix: set it to {least}, e.g. {default:g}."
        )
    return value


def _statement_s(options: str) -> float | None:
    """The ``statement_timeout`` an ``options`` libpq parameter sets, in seconds (PostgreSQL's unit is ms)."""
    found = _STATEMENT_TIMEOUT.search(options)
    if found is None:
        return None
    return float(found.group(1)) * _UNITS_S[(found.group(2) or "ms").lower()]


def postgres_connect_args(url: URL, timeouts: StoreTimeouts) -> tuple[dict[str, Any], StoreTimeouts]:
    """The psycopg connect arguments that apply ``timeouts`` to ``url``, and the timeouts in force: any of
    them the URL's query sets wins; ``options`` is merged (a ``search_path`` in it is kept)."""
    query = url.query
    args: dict[str, Any] = {name: value for name, value in TCP_SETTINGS.items() if name not in query}
    if "connect_timeout" in query:
        timeouts = StoreTimeouts(timeouts.statement_s, float(str(query["connect_timeout"])))
    else:
        args["connect_timeout"] = max(2, math.ceil(timeouts.connect_s))  # libpq: whole seconds, at least 2
    raw = query.get("options", "")
    options = " ".join(raw) if isinstance(raw, tuple) else raw
    given = _statement_s(options)
    if given is not None:
        timeouts = StoreTimeouts(given, timeouts.connect_s)
    elif timeouts.statement_s > 0:
        args["options"] = f"{options} -c statement_timeout={round(timeouts.statement_s * 1000)}".strip()
    return args, timeouts


def name_store_failures(engine: Engine, display_url: str, timeouts: StoreTimeouts, busy_s: float) -> None:
    """Turn the failures of a store that stopped answering into :class:`StoreUnavailable` once ``engine`` has
    connected once (before that, opening the store reports them with its own fix)."""
    connected = False

    @event.listens_for(engine, "connect")
    def _connected(_dbapi_conn: Any, _record: Any) -> None:
        nonlocal connected
        connected = True

    @event.listens_for(engine, "handle_error")
    def _named(context: ExceptionContext) -> BaseException | None:
        if context.is_pre_ping or not connected:
            return None  # a pre-ping failure reconnects quietly; a first connect is Store.open's to report
        what = _stall(context, timeouts, busy_s)
        return None if what is None else StoreUnavailable(display_url, what)


def _stall(context: ExceptionContext, timeouts: StoreTimeouts, busy_s: float) -> str | None:
    """What went wrong, worded for :class:`StoreUnavailable`, when the store stopped answering; else ``None``."""
    exc = context.original_exception
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if getattr(exc, "sqlstate", None) == _QUERY_CANCELED and "statement timeout" in str(exc):
        return (
            f"did not finish a statement within {timeouts.statement_s:g} s (its statement_timeout; if the store "
            f"is only slow, raise ${TIMEOUT_ENV})"
        )
    psycopg = sys.modules.get(
        "psycopg"
    )  # imported by then for a PostgreSQL store; a SQLite one never needs it
    if psycopg is None or not isinstance(exc, psycopg.OperationalError):
        return f"stayed locked by another writer for {busy_s:g} s" if _locked(context, first) else None
    if context.connection is None:
        return f"could not be reached again ({first})"
    if context.is_disconnect:
        verb = (
            "stopped answering" if first.startswith("no answer from the server") else "dropped the connection"
        )
        return f"{verb} ({first})"
    return None


def _locked(context: ExceptionContext, first: str) -> bool:
    return context.dialect.name == "sqlite" and "database is locked" in first
