"""Chunk texts in shadow rows: read from replies, bounded, redacted like answers, and handed to the judges."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ragreplay.compare.case_comparison import side_of
from ragreplay.core.shadow import (
    CHUNK_CUT_MARKER,
    MAX_CHUNK_CHARS,
    MAX_CHUNK_TEXTS,
    ShadowAnswer,
    ShadowRow,
)
from ragreplay.core.types import Answer, Case, RetrievedChunk
from ragreplay.judges.pairwise import format_chunks
from ragreplay.shadow import Shadow, ShadowLog
from ragreplay.shadow.offload import Offload
from ragreplay.shadow.payloads import RequestFields, parse_reply
from ragreplay.shadow.privacy import default_redactor, redact_texts
from shadow_fakes import FakeSink, FakeTarget

SECRET = "lisa@acme.nl"


class ChunkyTarget(FakeTarget):
    """A challenger whose answer comes with chunks that carry text."""

    def __init__(self, name: str, chunks: tuple[RetrievedChunk, ...]) -> None:
        super().__init__(name)
        self.chunks = chunks

    async def answer(self, question: str, case: Case) -> Answer:
        plain = await super().answer(question, case)
        return plain.model_copy(update={"contexts": self.chunks})


def test_texts_are_kept_for_the_first_chunks_and_cut_with_a_marker() -> None:
    chunks = tuple(RetrievedChunk(id=f"d#{i}", text=f"text {i}") for i in range(MAX_CHUNK_TEXTS + 5))
    chunks = (RetrievedChunk(id="big", text="x" * (MAX_CHUNK_CHARS * 3)), *chunks)
    side = ShadowAnswer.from_answer(Answer(text="a", contexts=chunks))
    assert len(side.chunk_ids) == MAX_CHUNK_TEXTS + 6  # every id is kept ...
    assert len(side.chunk_texts) == MAX_CHUNK_TEXTS  # ... the text of the first 20 only
    big = side.chunk_texts[0]
    assert big is not None and len(big) == MAX_CHUNK_CHARS and big.endswith(CHUNK_CUT_MARKER)
    assert side.chunk_texts[1] == "text 0"
    exact = ShadowAnswer.from_answer(Answer(text="a", contexts=(RetrievedChunk(id="e", text="y" * 2000),)))
    assert exact.chunk_texts == ["y" * 2000]  # at the bound: not cut


def test_ids_only_replies_and_old_rows_keep_no_texts() -> None:
    ids_only = ShadowAnswer.from_answer(Answer(text="a", contexts=(RetrievedChunk(id="d#1"),)))
    assert ids_only.chunk_texts == []
    old = ShadowAnswer.model_validate_json('{"text": "a", "chunk_ids": ["d#1", "d#2"]}')  # stored before
    assert [c.text for c in old.chunks()] == [None, None]
    mixed = ShadowAnswer.from_answer(
        Answer(text="a", contexts=(RetrievedChunk(id="d#1"), RetrievedChunk(id="d#2", text="kept")))
    )
    assert mixed.chunks() == (RetrievedChunk(id="d#1"), RetrievedChunk(id="d#2", text="kept"))
    with pytest.raises(ValidationError, match="2 chunk texts for 1 chunk ids"):
        ShadowAnswer(chunk_ids=["d#1"], chunk_texts=["a", "b"])


def test_the_judges_see_the_stored_texts() -> None:
    side = ShadowAnswer(text="a", chunk_ids=["d#1", "d#2"], chunk_texts=["Leave is 25 days"])
    row = ShadowRow(request_id="r", query="q", challenger="b", champion_answer=side, challenger_answer=side)
    shown = format_chunks(side_of(side.to_answer(), {}))
    assert "[1] d#1\nLeave is 25 days" in shown and "[2] d#2\n(text not available)" in shown
    assert row.to_case().retrieved[0].text == "Leave is 25 days"  # what the FIT judge reads


def test_a_reply_s_chunk_text_is_read_from_the_configured_field() -> None:
    body = json.dumps(
        {"answer": "ok", "sources": [{"doc": "d#1", "body": "Leave is 25 days"}, {"doc": "d#2"}]}
    )
    fields = RequestFields(contexts_path="sources", context_id_field="doc", context_text_field="body")
    answer = parse_reply(body.encode(), "application/json", fields).answer
    assert answer.contexts == (RetrievedChunk(id="d#1", text="Leave is 25 days"), RetrievedChunk(id="d#2"))
    stream = b'data: {"delta": "o", "sources": [{"id": "d#3", "text": "streamed"}]}\n\ndata: [DONE]\n\n'
    default = RequestFields(contexts_path="sources")
    assert parse_reply(stream, "text/event-stream", default).answer.contexts[0].text == "streamed"


def test_redact_texts_keeps_nones_and_marks_a_failure() -> None:
    assert redact_texts(default_redactor, [f"mail {SECRET}", None]) == (["mail [EMAIL]", None], None)

    def broken(text: str) -> str:
        raise ValueError("boom")

    assert redact_texts(broken, ["a", None]) == (["[redaction failed]", None], "ValueError: boom")


def _shadow(challenger: FakeTarget, **options: object) -> tuple[Shadow, FakeSink]:
    sink = FakeSink()
    shadow = Shadow(
        FakeTarget("champ"),
        {challenger.name: challenger},
        log=ShadowLog(sink, flush_interval_s=0.01),
        **options,
    )
    return shadow, sink


async def test_chunk_texts_of_both_sides_are_redacted_before_storage() -> None:
    chunk = RetrievedChunk(id="hr#1", text=f"Contact {SECRET} for leave")
    shadow, sink = _shadow(ChunkyTarget("b", (chunk,)))
    shadow.record("q", Answer(text="a", contexts=(chunk, RetrievedChunk(id="hr#2"))))
    await shadow.aclose()
    (row,) = sink.rows.values()
    assert row.champion_answer.chunk_texts == ["Contact [EMAIL] for leave", None]
    assert row.challenger_answer.chunk_texts == ["Contact [EMAIL] for leave"]
    assert SECRET not in row.model_dump_json()


async def test_long_chunk_texts_are_redacted_off_the_loop() -> None:
    def scrub(text: str) -> str:  # a closure: the offload runs it in its thread
        return default_redactor(text)

    offload = Offload(heavy_chars=500)
    texts = tuple(RetrievedChunk(id=f"d#{i}", text=f"{'filler ' * 40} {SECRET}") for i in range(5))
    shadow, sink = _shadow(ChunkyTarget("b", texts), redact=scrub, offload=offload)
    shadow.record("q", Answer(text="a", contexts=texts))
    await shadow.aclose()
    offload.close()
    (row,) = sink.rows.values()
    assert offload.runs >= 2  # each side's chunk texts went to the offload
    for side in (row.champion_answer, row.challenger_answer):
        assert len(side.chunk_texts) == 5
        assert all(t is not None and t.endswith("[EMAIL]") for t in side.chunk_texts)
