"""gc_paused holds automatic garbage collection off for nested and overlapping blocks and always gives it back."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from ragreplay.core.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def collection_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_nested_blocks_give_collection_back_when_the_last_ends() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_still_gives_collection_back() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_collection_left_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_blocks_in_threads_end_with_collection_on() -> None:
    inside, release = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with gc_paused():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    with gc_paused():
        release.set()
        threads[0].join()
        assert not gc.isenabled()  # another block is still open
    threads[1].join()
    assert gc.isenabled()
