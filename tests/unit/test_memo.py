"""The bounded memos of ``core.memo``: one make per key or object, bounded, identity not equality."""

from __future__ import annotations

from dataclasses import dataclass

from ragreplay.core.memo import KeyMemo, ObjectMemo


def test_key_memo_makes_once_per_key_and_starts_again_when_full() -> None:
    made: list[str] = []
    memo = KeyMemo(lambda key: made.append(key) or key.upper(), size=2)
    assert [memo("a"), memo("a"), memo("b")] == ["A", "A", "B"]
    assert made == ["a", "b"]
    memo("c")  # full: dropped, then made
    memo("a")
    assert made == ["a", "b", "c", "a"]


@dataclass(frozen=True)
class Box:
    value: int


def test_object_memo_goes_by_identity_and_holds_the_object() -> None:
    made: list[int] = []
    memo = ObjectMemo(lambda box: made.append(box.value) or box.value * 10, size=8)
    first, equal = Box(1), Box(1)
    assert memo(first) == memo(first) == 10
    assert memo(equal) == 10 and made == [1, 1]  # equal but another object: made again
    for n in range(20):  # temporaries: a reused id never returns another object's value
        assert memo(Box(n)) == n * 10
