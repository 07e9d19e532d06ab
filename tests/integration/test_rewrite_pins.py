"""Pinned rewrites: only readable rewrites are pinned, and per rewriter version (issue 13)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ragreplay.core.ids import case_id
from ragreplay.core.runs import RunRecord, RunStatus, SourceRecord
from ragreplay.core.types import Case, Conversation, Feedback, Message, Rewrite, Role
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.replay.engine import Replayer
from ragreplay.replay.replay_run import summarize_run
from ragreplay.replay.rewrite import Rewriter
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget


def _follow_up(store: Store) -> Case:
    history = (
        Message(role=Role.HUMAN, content="What is the leave policy?"),
        Message(role=Role.AI, content="25 days."),
    )
    case = Case(
        id=case_id("k", 3, "And for me?", "Same."),
        conversation_id="k",
        turn_index=3,
        query="And for me?",
        history=history,
        old_answer="Same.",
        feedback=Feedback.GOOD,
    )
    conv = Conversation(id="k", messages=(*history, Message(role=Role.HUMAN, content=case.query)))
    source = SourceRecord(id="s", path="x", format="canonical", ingested_at=datetime.now(UTC))
    store.cases.write_source(source, [(conv, [case], [])])
    return case


async def _replay(store: Store, run_id: str, case: Case, rewriter: Rewriter) -> None:
    store.runs.create_run(
        RunRecord(
            id=run_id,
            created_at=datetime.now(UTC),
            status=RunStatus.RUNNING,
            target_name="t",
            target_version="v",
            judge_name="fake:default",
            judge_prompt_version="p",
            rewriter_name=rewriter.name,
            rewrite_prompt_version=rewriter.prompt_version,
            config_hash=run_id,
            dataset_hash="d",
            n_cases=1,
        ),
        [case.id],
    )
    async with StoreWriter(store) as writer:
        judge = FitJudge(FakeChatModel())
        replayer = Replayer(store, writer, FakeTarget(echo_old_answer=True), judge, rewriter)
        await replayer.run(run_id, [case])


def _rewriter(name: str, *replies: str) -> Rewriter:
    return Rewriter(ScriptedChatModel(list(replies), name=name))


STANDALONE = json.dumps({"standalone": False, "query": "What is the leave policy for me?"})
STANDALONE_REWRITE = Rewrite(original="And for me?", query="What is the leave policy for me?", rewritten=True)


async def test_an_unreadable_reply_is_not_pinned_and_another_rewriter_rewrites(store: Store) -> None:
    case = _follow_up(store)
    await _replay(store, "run_1", case, _rewriter("bad:rw", "sorry, I cannot help"))
    first = summarize_run(store, "run_1")
    assert first.cases[0].question == "And for me?" and not first.cases[0].rewritten  # kept for this run
    assert store.rewrites.get_rewrites([case.id]) == {}  # and never pinned

    good = _rewriter("good:rw", STANDALONE)
    await _replay(store, "run_2", case, good)
    second = summarize_run(store, "run_2")
    assert second.run.rewriter_name == "good:rw"
    assert second.n_rewritten == 1 and second.cases[0].question == "What is the leave policy for me?"

    # the same rewriter again replays its pin without a call; the first one asks again (and now can read it)
    await _replay(store, "run_3", case, _rewriter("good:rw"))  # an empty script: any call would fail
    assert summarize_run(store, "run_3").cases[0].question == "What is the leave policy for me?"
    retry = _rewriter("bad:rw", json.dumps({"standalone": False, "query": "Leave for me?"}))
    await _replay(store, "run_4", case, retry)
    assert summarize_run(store, "run_4").cases[0].question == "Leave for me?"


async def test_pins_are_per_rewriter_version(store: Store) -> None:
    case = _follow_up(store)
    await _replay(store, "run_1", case, _rewriter("one:rw", STANDALONE))
    other = _rewriter("two:rw", json.dumps({"standalone": False, "query": "Leave policy, for me?"}))
    await _replay(store, "run_2", case, other)
    assert summarize_run(store, "run_2").cases[0].question == "Leave policy, for me?"
    newer = _rewriter("one:rw", json.dumps({"standalone": False, "query": "My leave policy?"}))
    newer.prompt_version = "rewrite-next"  # a new prompt is a new rewriter: it rewrites for itself
    await _replay(store, "run_3", case, newer)
    assert summarize_run(store, "run_3").cases[0].question == "My leave policy?"


def test_pins_made_before_migration_14_keep_their_rewriter_and_unreadable_ones_go(store_url: str) -> None:
    from sqlalchemy import text

    from ragreplay.core.types import Rewrite
    from ragreplay.store.connect import create_store_engine, parse_store_url
    from ragreplay.store.migrations import MIGRATIONS, migrate

    good = Rewrite(original="q", query="Q standalone", rewritten=True, model="m:rw", prompt_version="r1")
    bad = Rewrite(
        original="q",
        query="q",
        rewritten=False,
        model="m:rw",
        prompt_version="r1",
        note="unreadable rewriter reply; original question kept",
    )
    engine = create_store_engine(parse_store_url(store_url)[0])
    try:
        with engine.connect() as conn, conn.begin():
            assert migrate(conn, store_url, MIGRATIONS[:13])[-1] == 13
            for case, rewrite in (("case_good", good), ("case_bad", bad)):
                conn.execute(
                    text("INSERT INTO rewrites (case_id, data, pinned_at) VALUES (:c, :d, :t)"),
                    {"c": case, "d": rewrite.model_dump_json(), "t": datetime(2026, 11, 1, tzinfo=UTC)},
                )
    finally:
        engine.dispose()
    with Store.open(store_url) as store:
        assert store.rewrites.get_rewrites(["case_good", "case_bad"], "m:rw@r1") == {"case_good": good}
        assert store.rewrites.get_rewrite("case_good") == good


async def test_cases_still_to_be_rewritten_are_replayed_first(store: Store) -> None:
    follow_up = _follow_up(store)
    first_turn = Case(
        id=case_id("a", 1, "What is the leave policy?", "25 days."),
        conversation_id="a",
        turn_index=1,
        query="What is the leave policy?",
        history=(),
        old_answer="25 days.",
        feedback=Feedback.GOOD,
    )
    pinned = follow_up.model_copy(update={"id": "case_pinned", "conversation_id": "p"})
    store.rewrites.pin_rewrite("case_pinned", STANDALONE_REWRITE, "good:rw@" + Rewriter.prompt_version)
    async with StoreWriter(store) as writer:
        replayer = Replayer(
            store, writer, FakeTarget(), FitJudge(FakeChatModel()), _rewriter("good:rw", STANDALONE)
        )
        order = [case.id for case, _ in replayer.plan("run_x", [first_turn, pinned, follow_up]).todo]
    # two calls one after the other (rewrite, then judge) go out first; a pinned rewrite needs no call
    assert order == [follow_up.id, first_turn.id, "case_pinned"]
