"""Text made storable: NUL and lone surrogates replaced (and counted), everything else untouched."""

from __future__ import annotations

from ragreplay.core.storable import REPLACEMENT, storable, storable_text


def test_nul_and_lone_surrogates_become_the_replacement_character() -> None:
    assert storable_text("a\x00b\ud800c\udfffd") == (f"a{REPLACEMENT}b{REPLACEMENT}c{REPLACEMENT}d", 3)
    text = "Mag ik €50 houden? 😀 \u00e9"  # real non-ASCII, a surrogate *pair* encoded as one code point
    assert storable_text(text) == (text, 0) and storable_text(text)[0] is text


def test_nested_values_keys_included_and_untouched_values_returned_as_is() -> None:
    value = {"q\x00": ["ok", ("x\ud83d", 1)], "n": 2, "deep": {"k": "fine"}}
    fixed, n = storable(value)
    assert n == 2 and fixed == {
        f"q{REPLACEMENT}": ["ok", (f"x{REPLACEMENT}", 1)],
        "n": 2,
        "deep": {"k": "fine"},
    }
    clean = {"a": ["b", ("c",)], "n": None}
    assert storable(clean) == (clean, 0) and storable(clean)[0] is clean


def test_the_ascii_fast_path_agrees_with_the_general_rule() -> None:
    import re

    rule = re.compile("[\x00\ud800-\udfff]")
    for text in [
        "",
        "plain",
        "a\x00b\x00",
        "\x00",
        "caf\u00e9\x00",
        "\ud800x\x00",
        "ok \u4e2d\u6587",
        "\udfff",
    ]:
        assert storable_text(text) == rule.subn("\ufffd", text), repr(text)


def test_a_result_updated_is_the_copy_model_copy_makes() -> None:
    """``ResultRecord.updated`` (the engine's cheaper copy) makes what ``model_copy(update=...)`` makes: the
    same fields, the same fields-set (what ``exclude_unset`` dumps), the original untouched."""
    from ragreplay.core.runs import ResultRecord, ResultStatus
    from ragreplay.core.types import Answer

    start = ResultRecord(run_id="r", case_id="c")
    changes = {"answer": Answer(text="a"), "status": ResultStatus.ERROR, "error": "boom"}
    fast, slow = start.updated(**changes), start.model_copy(update=changes)
    assert fast == slow and type(fast) is ResultRecord
    assert fast.model_fields_set == slow.model_fields_set == {"run_id", "case_id", *changes}
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert start.answer is None and start.model_fields_set == {"run_id", "case_id"}
    assert fast.updated(error=None).error is None and fast.error == "boom"
