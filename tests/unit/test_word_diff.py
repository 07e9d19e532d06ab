"""The word-level diff of the dashboard's row page: it rebuilds both answers, marks only the words that
changed, and stays bounded on huge answers."""

from __future__ import annotations

from ragreplay.report.word_diff import Segment, tokens, word_diff


def _side(segments: list[Segment], keep: str) -> str:
    return "".join(s.text for s in segments if s.kind in ("same", keep))


def test_the_diff_rebuilds_both_answers_and_marks_only_changed_words() -> None:
    old = "You get 25 days of leave, see HR."
    new = "You get 30 days of paid leave, see HR!"
    segments = word_diff(old, new)
    assert _side(segments, "deleted") == old and _side(segments, "inserted") == new
    assert [s.text for s in segments if s.kind == "deleted"] == ["25", "."]
    assert [s.text for s in segments if s.kind == "inserted"] in (["30", "paid ", "!"], ["30", " paid", "!"])


def test_markup_in_an_answer_is_kept_as_text_for_the_template_to_escape() -> None:
    segments = word_diff("fine", "<script>alert(1)</script>")
    assert _side(segments, "inserted") == "<script>alert(1)</script>"


def test_identical_and_empty_answers() -> None:
    assert word_diff("same text", "same text") == [Segment("same", "same text")]
    assert word_diff("", "") == []
    assert word_diff("", "new") == [Segment("inserted", "new")]


def test_a_huge_answer_is_cut_into_one_tail_segment() -> None:
    old, new = "word " * 5000, "word " * 4000 + "other " * 1000
    segments = word_diff(old, new, max_tokens=200)
    assert _side(segments, "deleted") == old and _side(segments, "inserted") == new
    assert len(segments) <= 3
    assert "".join(tokens("a, b  c")) == "a, b  c"
