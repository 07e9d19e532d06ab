"""Synthetic generation's pieces: the quotas, the seeded plan, near-duplicate merging, the versioned fenced
structured request and how replies are read (unknown chunk ids dropped, unreadable ones refused), and a model
reply (scripted) becoming the rows instead of the template draft."""

from __future__ import annotations

import json

import pytest

from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.core.chat import ChatRequest
from ragreplay.datasets.corpus_facts import CorpusFacts, read_corpus_facts
from ragreplay.datasets.synth import dedupe, generate
from ragreplay.datasets.synth_plan import SynthDraft, plan_tasks, quotas
from ragreplay.datasets.synth_prompt import PROMPT_VERSION, UnreadableReply, build_request, read_reply
from ragreplay.providers.fake import request_key, respond
from ragreplay.providers.scripted import ScriptedChatModel


@pytest.fixture(scope="module")
def facts() -> CorpusFacts:
    return read_corpus_facts(demo_data_dir() / "challenger.yaml")


def test_quotas_follow_the_mix_and_add_up() -> None:
    assert quotas(20) == {"single_hop": 8, "multi_hop": 4, "unanswerable": 4, "follow_up": 4}
    assert quotas(3) == {"single_hop": 1, "multi_hop": 1, "unanswerable": 1, "follow_up": 0}
    assert all(sum(quotas(n).values()) == n for n in range(1, 50))


def test_the_plan_is_seeded(facts: CorpusFacts) -> None:
    first, short = plan_tasks(facts, 15, seed=1)
    again, _ = plan_tasks(facts, 15, seed=1)
    other, _ = plan_tasks(facts, 15, seed=2)
    assert [t.draft for t in first] == [t.draft for t in again] != [t.draft for t in other]
    assert short == {} and len({t.draft.question for t in first}) == 15


def test_near_duplicates_merge_their_chunks(facts: CorpusFacts) -> None:
    task = plan_tasks(facts, 1, seed=0)[0][0]
    a = SynthDraft("How many days of annual leave do I get?", "25 days.", ("leave#1",))
    b = SynthDraft("Annual leave: how many days do I get?", "25 days.", ("leave#2",))
    c = SynthDraft("Who approves travel?", "Your manager.", ("travel#1",))
    kept, merged = dedupe([(task, a), (task, b), (task, c)])
    assert merged == 1 and [i.question for _, i in kept] == [a.question, c.question]
    assert kept[0][1].chunk_ids == ("leave#1", "leave#2")


def test_the_request_is_versioned_fenced_and_structured(facts: CorpusFacts) -> None:
    task = next(t for t in plan_tasks(facts, 10, seed=0)[0] if t.kind == "multi_hop")
    request = build_request(task)
    user = request.messages[1].content
    assert request.prompt_version == PROMPT_VERSION and PROMPT_VERSION.startswith("synth-1.")
    assert (
        request.response_format is not None
        and request.response_format.json_schema["additionalProperties"] is False
    )
    assert "Write one multi_hop test item" in user and user.count("<contexts>") == 1
    assert all(c.id in user for c in task.chunks)
    assert json.loads(respond(request))["question"] == task.draft.question  # the fake answers with the draft


def test_replies_are_read_strictly() -> None:
    good = {
        "question": "Q?",
        "reference": "R.",
        "chunk_ids": ["a#1", "zz#9"],
        "first_question": "",
        "first_answer": "",
        "reason": "r",
    }
    assert read_reply(json.dumps(good), "single_hop", {"a#1"}).chunk_ids == ("a#1",)
    assert read_reply(json.dumps(good), "unanswerable", {"a#1"}).chunk_ids == ()
    with pytest.raises(UnreadableReply, match="needs first_question"):
        read_reply(json.dumps(good), "follow_up", {"a#1"})
    with pytest.raises(UnreadableReply, match="no JSON object"):
        read_reply("Here is a nice question about leave.", "single_hop", {"a#1"})
    with pytest.raises(UnreadableReply, match="schema"):
        read_reply(json.dumps({**good, "extra": 1}), "single_hop", {"a#1"})
    with pytest.raises(UnreadableReply, match="empty"):
        read_reply(json.dumps({**good, "question": " "}), "single_hop", {"a#1"})


async def test_a_models_items_replace_the_drafts_and_unreadable_ones_are_counted(facts: CorpusFacts) -> None:
    def reply(request: ChatRequest) -> str:
        draft = dict(request.hints["draft"])
        if request.hints["kind"] == "unanswerable":
            return "I would rather not."
        draft["question"] = "Model: " + draft["question"]
        return json.dumps(draft)

    model = ScriptedChatModel(reply)
    result = await generate(facts, 10, 0, model, "scripted:x", concurrency=4)
    assert len(result.rows) == 8 and all(r.question.startswith("Model: ") for r in result.rows)
    assert len(result.problems) == 2 and all("unreadable reply" in p for p in result.problems)
    assert result.recipe["generator"] == "model" and not result.template_made


def test_every_task_asks_a_different_request(facts: CorpusFacts) -> None:
    """The cache keys on the request (never the hints): two tasks on one chunk must not share a reply."""
    tasks, _ = plan_tasks(facts, 120, seed=0)
    assert len({request_key(build_request(t)) for t in tasks}) == len(tasks)
    assert all(f"Topic: {t.focus}" in build_request(t).messages[1].content for t in tasks)
