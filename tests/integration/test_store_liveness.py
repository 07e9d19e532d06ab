"""The store's timeouts and its named error for a store that stops answering (store.liveness): connect arguments
merged with the URL's, the environment's settings, and on real servers a statement timeout, a silent server
(through a paused relay), a lost connection and a locked SQLite file, each a StoreUnavailable, while a server
that cannot be reached at open still gets the open error with its fix."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from ragreplay.cli.app import main
from ragreplay.store import Store, StoreError, StoreUnavailable
from ragreplay.store.liveness import TCP_SETTINGS, StoreTimeouts, postgres_connect_args
from relay import TcpRelay

PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def test_connect_arguments_merge_with_the_url() -> None:
    args, in_force = postgres_connect_args(
        make_url(PG + "?options=-csearch_path%3Drr_x"), StoreTimeouts(5, 3)
    )
    assert args["options"] == "-csearch_path=rr_x -c statement_timeout=5000"  # the search path is kept
    assert args["connect_timeout"] == 3 and {k: args[k] for k in TCP_SETTINGS} == TCP_SETTINGS
    assert in_force == StoreTimeouts(5, 3) and in_force.answer_deadline_s() == 10

    # What the URL sets wins, and the client's deadline follows the URL's statement_timeout.
    url = make_url(PG + "?connect_timeout=7&keepalives_idle=5&options=-c%20statement_timeout%3D2s")
    args, in_force = postgres_connect_args(url, StoreTimeouts())
    assert "options" not in args and "connect_timeout" not in args and "keepalives_idle" not in args
    assert args["keepalives"] == 1 and in_force == StoreTimeouts(2, 7) and in_force.answer_deadline_s() == 4

    args, in_force = postgres_connect_args(make_url(PG), StoreTimeouts(0, 0.5))
    assert "options" not in args and args["connect_timeout"] == 2  # libpq's least
    assert in_force.answer_deadline_s() is None  # 0: no limit


def test_timeouts_from_the_environment() -> None:
    assert StoreTimeouts.from_env({}) == StoreTimeouts(120, 10)
    env = {"RAGREPLAY_DB_TIMEOUT_S": "2.5", "RAGREPLAY_DB_CONNECT_TIMEOUT_S": "4"}
    assert StoreTimeouts.from_env(env) == StoreTimeouts(2.5, 4)
    for name, value in (("RAGREPLAY_DB_TIMEOUT_S", "soon"), ("RAGREPLAY_DB_CONNECT_TIMEOUT_S", "0")):
        with pytest.raises(StoreError, match=rf"\${name}='{value}' is not a number of seconds. Fix: set it"):
            StoreTimeouts.from_env({name: value})


def test_a_bad_timeout_in_the_environment_is_a_mistake_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGREPLAY_DB_TIMEOUT_S", "-1")
    assert main(["runs", "--db", "postgresql://postgres@127.0.0.1:5432/test"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "$RAGREPLAY_DB_TIMEOUT_S='-1' is not a number of seconds" in err and "Traceback" not in err


def _postgres(store_url: str) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("needs a database server")


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_statement_past_the_timeout_is_named(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _postgres(store_url)
    monkeypatch.setenv("RAGREPLAY_DB_TIMEOUT_S", "0.5")
    with Store.open(store_url) as store:
        with store._read() as conn:
            assert conn.execute(text("show search_path")).scalar() == store_url.rsplit("%3D", 1)[1]
        with pytest.raises(StoreUnavailable) as err, store._read() as conn:
            conn.execute(text("select pg_sleep(3)"))
    message = str(err.value)
    assert message.startswith("the store at postgresql://postgres@127.0.0.1:5432/test")
    assert "did not finish a statement within 0.5 s" in message and "raise $RAGREPLAY_DB_TIMEOUT_S" in message


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_silent_server_and_a_lost_connection_are_named(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _postgres(store_url)
    monkeypatch.setenv("RAGREPLAY_DB_TIMEOUT_S", "0.5")
    monkeypatch.setenv("RAGREPLAY_DB_CONNECT_TIMEOUT_S", "2")
    relay = TcpRelay(5432)
    try:
        with Store.open(relay.url_for(store_url)) as store:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable) as err, store._read() as conn:
                relay.pause()  # mid-transaction: the statement goes out, no answer comes back
                conn.execute(text("select 1"))
            assert "stopped answering (no answer from the server within 1 s)" in str(err.value)
            assert time.monotonic() - started < 10
            # The next use reconnects, and a server still silent then is named too.
            with pytest.raises(StoreUnavailable, match=r"could not be reached again \(connection timeout"):
                store.schema_version()
            relay.resume()
            assert store.schema_version() > 0  # back: the same store works again
            with pytest.raises(StoreUnavailable) as err, store._read() as conn:
                relay.cut()
                conn.execute(text("select 1"))
            assert "dropped the connection" in str(err.value)
            assert "run the same command again to resume" in str(err.value)
    finally:
        relay.stop()


def test_a_server_unreachable_at_open_keeps_the_open_error(monkeypatch: pytest.MonkeyPatch) -> None:
    relay = TcpRelay(5432)
    url = f"postgresql://postgres@127.0.0.1:{relay.port}/test"
    relay.cut()
    relay.stop()
    with pytest.raises(StoreError) as err:
        Store.open(url)
    assert not isinstance(err.value, StoreUnavailable)
    assert str(err.value).startswith(f"Cannot open the store at {url}") and "Fix: check that" in str(
        err.value
    )


def test_a_sqlite_store_locked_past_the_busy_timeout_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragreplay.store.connect.BUSY_TIMEOUT_MS", 300)
    path = tmp_path / "store.db"
    with Store.open(str(path)) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            with pytest.raises(StoreUnavailable, match=r"stayed locked by another writer for 0.3 s"):
                store.secrets.get_or_create("salt", lambda: "x")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
