"""A NUL (PostgreSQL) or a lone surrogate (SQLite) in a request's text no longer loses a batch: the text is
made storable on the way, counted, and every row of the batch lands."""

from __future__ import annotations

import pytest

from builders import make_shadow_row
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback
from ragreplay.shadow.log import FeedbackLog, ShadowLog
from ragreplay.store import Store

ODD = ["nul \x00 inside", "lone \ud800 surrogate", "both \udfff and \x00"]


def row(i: int, text: str) -> ShadowRow:
    return make_shadow_row(
        request_id=f"req-{i}-{text}",
        query=text,
        tags={"department": text},
        champion_answer=ShadowAnswer(text=text, chunk_ids=[f"doc{text}#1"], error=None),
        challenger_answer=ShadowAnswer(text="fine", error=text),
    )


async def test_a_batch_with_unstorable_text_loses_nothing(store: Store) -> None:
    log = ShadowLog(store, batch_size=8, flush_interval_s=0.01)
    rows = [row(i, ODD[i % 3] if i % 2 else f"plain {i}") for i in range(8)]
    for r in rows:
        log.offer(r)
    await log.aclose()
    stats = log.stats()
    assert (stats.written, stats.lost, stats.made_storable) == (8, 0, 4)
    stored = {r.id: r for r in store.shadow_rows.iter_shadow_rows()}
    assert set(stored) == {r.id for r in rows}
    for r in rows:
        got = stored[r.id]
        for text in (got.query, got.tags["department"], got.champion_answer.text, got.request_id):
            assert "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)
    assert stored[rows[3].id].query == "nul \ufffd inside"


async def test_feedback_with_unstorable_comments_is_kept(store: Store) -> None:
    log = FeedbackLog(store, batch_size=4, flush_interval_s=0.01)
    for i, text in enumerate(ODD):
        log.offer(ShadowFeedback(request_id=f"fb{i}", feedback=Feedback.BAD, comment=text))
    await log.aclose()
    assert (log.written, log.lost, log.made_storable) == (3, 0, 3)
    kept = store.shadow_feedback.shadow_feedback_for([f"fb{i}" for i in range(3)])
    assert kept["fb0"].comment == "nul \ufffd inside"


@pytest.mark.parametrize("text", ODD)
def test_the_store_itself_makes_text_storable_for_any_writer(store: Store, text: str) -> None:
    # the repositories' Text columns replace what cannot be stored, whoever writes
    store.shadow_rows.write_shadow_rows([row(0, text)])
    (got,) = store.shadow_rows.iter_shadow_rows()
    assert "\ufffd" in got.query and got.query.replace("\ufffd", "") == text.replace("\x00", "").replace(
        "\ud800", ""
    ).replace("\udfff", "")
