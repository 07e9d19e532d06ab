"""A pinned rewrite is paid once: later runs that replay it report no rewrite cost."""

from __future__ import annotations

from datetime import UTC, datetime

from ragreplay.core.ids import case_id
from ragreplay.core.runs import RunRecord, RunStatus, SourceRecord
from ragreplay.core.types import Case, Conversation, Feedback, Message, Rewrite, Role
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.providers.fake import FakeChatModel
from ragreplay.replay.engine import Replayer
from ragreplay.store import Store
from ragreplay.targets.fake import FakeTarget


class PricedRewriter:
    name = "priced:rw"
    prompt_version = "rw-1"

    def __init__(self) -> None:
        self.calls = 0

    async def rewrite(self, case: Case) -> Rewrite:
        self.calls += 1
        return Rewrite(original=case.query, query=case.query + " (standalone)", rewritten=True, cost_usd=0.5)


def _follow_up() -> Case:
    history = (
        Message(role=Role.HUMAN, content="What is the leave policy?"),
        Message(role=Role.AI, content="25 days."),
    )
    return Case(
        id=case_id("k", 3, "And for me?", "Same."),
        conversation_id="k",
        turn_index=3,
        query="And for me?",
        history=history,
        old_answer="Same.",
        feedback=Feedback.GOOD,
    )


def _run(store: Store, run_id: str, case: Case) -> None:
    store.runs.create_run(
        RunRecord(
            id=run_id,
            created_at=datetime.now(UTC),
            status=RunStatus.RUNNING,
            target_name="t",
            target_version="v",
            judge_name="fake:default",
            judge_prompt_version="p",
            rewriter_name="priced:rw",
            rewrite_prompt_version="rw-1",
            config_hash=run_id,
            dataset_hash="d",
            n_cases=1,
        ),
        [case.id],
    )


async def test_pinned_rewrite_cost_is_counted_once(store: Store) -> None:
    case = _follow_up()
    conv = Conversation(id="k", messages=(*case.history, Message(role=Role.HUMAN, content=case.query)))
    store.cases.write_source(
        SourceRecord(id="s", path="x", format="canonical", ingested_at=datetime.now(UTC)),
        [(conv, [case], [])],
    )
    rewriter = PricedRewriter()
    costs = []
    for run_id in ("run_1", "run_2"):
        _run(store, run_id, case)
        async with StoreWriter(store) as writer:
            replayer = Replayer(
                store=store,
                writer=writer,
                target=FakeTarget(echo_old_answer=True),
                judge=FitJudge(FakeChatModel()),
                rewriter=rewriter,
            )
            costs.append((await replayer.run(run_id, [case])).cost_usd)
        (result,) = store.runs.load_results(run_id)
        assert result.rewrite is not None and result.rewrite.query == "And for me? (standalone)"
    assert rewriter.calls == 1  # pinned: the second run replays the same question without asking again
    assert costs == [0.5, 0.0]
