"""Re-judging the human-labelled items with a changed judge, on SQLite and PostgreSQL: the estimate comes before
any call, exactly the calls needed are made (labelled items x 2 orders, then none, then only the new items), a
killed re-judge resumes without repeating a call, old vs new are set side by side, history is recorded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from ragreplay.core.chat import ChatRequest
from ragreplay.core.judge_version import JudgeVersion
from ragreplay.core.review import Review, taxonomy
from ragreplay.core.shadow import ShadowAnswer, ShadowRow
from ragreplay.core.version_agreement import side_by_side
from ragreplay.errors import ConfigError
from ragreplay.jobs.runner import Progress
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.judges.pairwise import Axis, LLMPairwiseJudge
from ragreplay.judges.version import version_of
from ragreplay.providers.cache import CachedModel, cache_key
from ragreplay.providers.fake import FakeChatModel, pairwise_reply
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.review.calibration import labelled_items
from ragreplay.review.history import record_history, version_figures
from ragreplay.review.queues import build_calibration_queue
from ragreplay.review.rejudge import RejudgeItem, estimate_rejudge, rejudge, rejudge_plan
from ragreplay.shadow.judging import ShadowJudges, judge_shadow
from ragreplay.store import Store
from regset_data import seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)
WEEK = NOW - timedelta(days=7)
TAX = taxonomy()


def _answer(request: ChatRequest) -> str:
    return pairwise_reply(dict(request.hints))


def _review(store: Store, queue_id: str, reviewer: str, n: int) -> int:
    """``reviewer`` takes ``n`` items of the queue and agrees with the judge kept on each."""
    done = 0
    while done < n and (a := store.reviews.next_item_for(queue_id, reviewer)) is not None:
        judge = a.item.judge.winner if a.item.judge else None
        human = judge or "tie"
        choice = "tie" if human == "tie" else ("A" if human == a.a_side else "B")
        review = Review.model_validate(
            {"reviewer": reviewer, "item_key": a.item.key, "a_side": a.a_side, "choice": choice}
        )
        store.reviews.save_review(queue_id, review)
        done += 1
    return done


async def _rejudge(store: Store, model: ScriptedChatModel, axes: tuple[Axis, ...] | None = None) -> Progress:
    async with StoreWriter(store) as writer:
        judge = LLMPairwiseJudge(CachedModel(model, writer), *([axes] if axes else []))
        todo = rejudge_plan(store, labelled_items(store), version_of(judge))
        return await rejudge(writer, judge, version_of(judge), todo, concurrency=4)


def _judge(model: ScriptedChatModel, store: Store) -> LLMPairwiseJudge:
    return LLMPairwiseJudge(CachedModel(model, store.cache))


def test_rejudge_makes_exactly_the_calls_needed_and_sets_old_beside_new(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=20, seed=1)
    assert _review(store, queue.id, "ann", 12) == 12
    model = ScriptedChatModel(_answer, name="scripted:judge")
    judge = _judge(model, store)
    version = version_of(judge)

    # The estimate, before any call: 12 labelled items x 2 orders, none cached yet, free-priced model unknown.
    todo = rejudge_plan(store, labelled_items(store), version)
    estimate = estimate_rejudge(judge, todo, store.cache, prices={})
    assert (estimate.items, estimate.calls, estimate.cached, estimate.to_call) == (12, 24, 0, 24)
    assert estimate.input_tokens > 0 and estimate.output_tokens == 24 * 250
    assert estimate.cost_usd is None and "price unknown" in estimate.describe()
    assert model.calls == 0

    progress = asyncio.run(_rejudge(store, model))
    assert model.calls == 24 and progress.done == 12 and progress.errors == 0
    assert len(store.review_judgments.judged_keys(version.id)) == 12
    orders = {tuple(m.content for m in r.messages) for r in model.requests}
    assert len(orders) == 24  # each item in both A/B orders, no request twice

    # Again: nothing left to judge, no call; every request of the 12 items is in the model cache now.
    labelled = labelled_items(store)
    assert rejudge_plan(store, labelled, version) == []
    everything = [RejudgeItem(labelled.locations[k][0], i) for k, i in labelled.items.items()]
    assert estimate_rejudge(judge, everything, store.cache).cached == 24
    asyncio.run(_rejudge(store, model))
    assert model.calls == 24

    # Eight more reviews: only those eight items are judged, in both orders.
    assert _review(store, queue.id, "ann", 20) == 8
    assert len(rejudge_plan(store, labelled_items(store), version)) == 8
    asyncio.run(_rejudge(store, model))
    assert model.calls == 24 + 16

    # Old (the decision kept on each item) beside new, on the same items.
    figures = version_figures(store)
    old = next(v for v in figures.decisions if v != version.id)
    assert set(figures.decisions) == {old, version.id}
    sides = side_by_side(figures.labelled.items, figures.labelled.reviews, figures.decisions, version.id)
    (side,) = sides
    assert side.old == old and side.new == version.id and side.old_label == "fake:default@p1"
    assert side.n == side.old_vs_human.n == side.new_vs_human.n == side.old_vs_new.agreement.n > 0
    assert side.old_vs_human.agreement.k == side.n  # the reviewer agreed with the kept decisions
    same = sum(
        figures.decisions[old][k].winner == figures.decisions[version.id][k].winner
        for k in figures.decisions[version.id]
        if figures.decisions[old][k].winner is not None
        and figures.decisions[version.id][k].winner is not None
        and figures.labelled.items[k].judge is not None
    )
    assert side.old_vs_new.agreement.k == same
    assert side.new_vs_human.agreement.k == same  # the reviewer sided with old, so new agrees where old does

    # The history: one snapshot per version, again only when figures change.
    added = record_history(store, figures, "rejudge")
    assert {s.judge_version for s in added} == {old, version.id}
    assert record_history(store, version_figures(store), "calibration") == []
    assert {s.source for s in store.calibration_history.list_history()} == {"rejudge"}


def test_a_changed_prompt_is_a_new_version_and_only_it_is_judged(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=6, seed=1)
    _review(store, queue.id, "ann", 6)
    model = ScriptedChatModel(_answer, name="scripted:judge")
    asyncio.run(_rejudge(store, model))
    assert model.calls == 12
    fewer = (Axis(name="groundedness", rubric="every claim is in a chunk"),)
    changed: JudgeVersion = version_of(LLMPairwiseJudge(model, fewer))
    assert changed.id != version_of(LLMPairwiseJudge(model)).id and changed.axes == ("groundedness",)
    asyncio.run(_rejudge(store, model, fewer))
    assert model.calls == 24  # new prompt: all six items again, both orders
    asyncio.run(_rejudge(store, model, fewer))
    assert model.calls == 24


def test_a_killed_rejudge_resumes_without_repeating_a_call(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=10, seed=1)
    _review(store, queue.id, "ann", 10)
    answered: list[str] = []

    def dies_after_seven(request: ChatRequest) -> str:
        if len(answered) == 7:
            raise ConfigError("stopped")  # a user error stops the whole job, like Ctrl-C
        answered.append(cache_key("scripted:judge", request))
        return _answer(request)

    with pytest.raises(ConfigError):
        asyncio.run(_rejudge(store, ScriptedChatModel(dies_after_seven, name="scripted:judge")))
    saved = len(store.review_judgments.load_review_judgments())
    assert 0 < saved < 10

    resumed = ScriptedChatModel(_answer, name="scripted:judge")
    progress = asyncio.run(_rejudge(store, resumed))
    again = {cache_key("scripted:judge", r) for r in resumed.requests}
    assert not again & set(answered)  # no call answered before is made again
    assert len(answered) + resumed.calls == 20 and progress.done == 10 - saved
    assert len(store.review_judgments.load_review_judgments()) == 10


def test_a_provider_failure_is_counted_not_saved_and_retried_next_time(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=4, seed=1)
    _review(store, queue.id, "ann", 4)

    def fails(request: ChatRequest) -> str:
        raise RuntimeError("HTTP 503")

    progress = asyncio.run(_rejudge(store, ScriptedChatModel(fails, name="scripted:judge")))
    assert progress.errors == 4 and store.review_judgments.load_review_judgments() == []
    model = ScriptedChatModel(_answer, name="scripted:judge")
    assert asyncio.run(_rejudge(store, model)).errors == 0 and model.calls == 8


def test_the_judge_that_judged_the_shadow_rows_needs_no_rejudge(store: Store) -> None:
    rows = [
        ShadowRow(
            id=f"row-{n}",
            ts=NOW - timedelta(hours=n + 1),
            request_id=f"req-{n}",
            query=f"how many days of leave in year {n}?",
            challenger="b",
            champion_answer=ShadowAnswer(text=f"{n} days of leave"),
            challenger_answer=ShadowAnswer(text=f"leave is {n + 1} days in year {n}"),
        )
        for n in range(5)
    ]
    store.shadow_rows.write_shadow_rows(rows)
    model = ScriptedChatModel(_answer, name="scripted:judge")

    async def judge_rows() -> None:
        async with StoreWriter(store) as writer:
            judges = ShadowJudges(
                pairwise=LLMPairwiseJudge(CachedModel(model, writer)),
                fit_judge=FitJudge(FakeChatModel()),
            )
            await judge_shadow(store, writer, judges, since=WEEK)

    asyncio.run(judge_rows())
    assert model.calls == 10
    queue = build_calibration_queue(store, WEEK, TAX, n=5, seed=1)
    items = store.reviews.load_items(queue.id)
    version = version_of(LLMPairwiseJudge(model))
    assert items and {i.judge.judge_version for i in items if i.judge} == {version.id}
    _review(store, queue.id, "ann", len(items))
    assert rejudge_plan(store, labelled_items(store), version) == []
    asyncio.run(_rejudge(store, model))
    assert model.calls == 10


def test_rejudge_counts_the_calls_of_a_judge_with_no_known_price(store: Store) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, WEEK, TAX, n=20, seed=1)
    assert _review(store, queue.id, "ann", 3) == 3
    progress = asyncio.run(_rejudge(store, ScriptedChatModel(_answer, name="acme:unlisted", cost_usd=None)))
    assert progress.done == 3
    assert (progress.cost_usd, progress.unpriced_calls) == (0.0, 6)  # 3 items x 2 orders, none priced
