"""The user-id salt is never empty: an argument, $RAGREPLAY_SHADOW_SALT, or one the store makes and keeps for
every replica; with no store, one for the process only."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from ragreplay.shadow.library import Shadow
from ragreplay.shadow.log import ShadowLog
from ragreplay.shadow.privacy import SALT_ENV, hash_user_id
from ragreplay.store import Store
from shadow_fakes import FakeTarget


def shadow(store: Store | None, salt: str = "") -> Shadow:
    log = ShadowLog(store) if store is not None else None
    return Shadow(FakeTarget("champion"), {"b": FakeTarget("b")}, log=log, salt=salt)


def test_without_a_salt_the_store_makes_one_and_every_replica_shares_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SALT_ENV, raising=False)
    with Store.open(store_url) as first_store, Store.open(store_url) as second_store:
        first, second = shadow(first_store), shadow(second_store)
    assert first.salt_source == "the store (made now)" and second.salt_source == "the store"
    assert first.salt == second.salt and len(first.salt) == 64
    empty_key = hmac.new(b"", b"u7", hashlib.sha256).hexdigest()
    assert hash_user_id("u7", first.salt) != empty_key  # guessable ids are no longer reversible


def test_an_argument_or_the_environment_wins(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shadow(store, salt="pepper").salt == "pepper"
    monkeypatch.setenv(SALT_ENV, "from-env")
    s = shadow(store)
    assert (s.salt, s.salt_source) == ("from-env", f"${SALT_ENV}")


def test_with_no_store_the_salt_lives_in_the_process_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SALT_ENV, raising=False)
    a, b = shadow(None), shadow(None)
    assert a.salt and a.salt != b.salt and a.salt_source == "this process only (no store)"
