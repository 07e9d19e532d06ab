"""The shipped fake chat model: its answering rules and its test hooks."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.core.ids import canonical_json
from ragreplay.providers.fake import FakeChatModel, FakeCounters, find_subject, jaccard, rewrite_query


def req(task: str = "", content: str = "hello there", **hints: Any) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="user", content=content),), task=task, hints=hints)


def human(text: str) -> dict[str, str]:
    return {"role": "human", "content": text}


def ai(text: str) -> dict[str, str]:
    return {"role": "ai", "content": text}


# --- rewrite ---


@pytest.mark.parametrize(
    ("query", "history", "expected"),
    [
        ("What is her role?", [human("Who is Lisa?"), ai("Lisa is HR lead.")], "What is Lisa role?"),
        ("Where is it?", [human("Tell me about the New York office.")], "Where is New York?"),
        ("And him?", [human("Who is Lisa van Dam?")], "And Lisa van Dam?"),
        ("Wat doet hij?", [human("Wie is Jan Jansen?")], "Wat doet Jan Jansen?"),
        # no capitalised word past the first: the last word of more than 3 letters
        ("How big is that?", [human("tell me about the budget")], "How big is budget?"),
        # sentence-first capitalised words are not subjects
        (
            "When does it open?",
            [human("Is there a gym? Where is the cafeteria?")],
            "When does cafeteria open?",
        ),
        # the most recent human message wins
        ("Is she here?", [human("Who is Anna?"), ai("x"), human("And who is Bea?")], "Is Bea here?"),
    ],
)
def test_rewrite_replaces_first_pronoun_with_recent_subject(query: str, history: list, expected: str) -> None:
    assert rewrite_query(query, history) == (False, expected)


def test_rewrite_replaces_only_the_first_pronoun() -> None:
    assert rewrite_query("Is it true that it works?", [human("Tell me about Ragreplay")]) == (
        False,
        "Is Ragreplay true that it works?",
    )


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ("What is the leave policy?", [human("Who is Lisa?")]),  # no pronoun
        ("What is her role?", []),  # no history
        ("What is her role?", [ai("Lisa is the HR lead.")]),  # history without a human message
        ("What is the theme?", [human("Who is Lisa?")]),  # 'the' is not 'them'; whole words only
    ],
)
def test_rewrite_leaves_standalone_queries_alone(query: str, history: list) -> None:
    assert rewrite_query(query, history) == (True, query)


def test_find_subject_prefers_names_and_skips_I() -> None:
    assert find_subject("Then I met Anna and Bob Smith") == "Bob Smith"
    assert find_subject("Is Lisa's team big?") == "Lisa"
    assert find_subject("ok") is None


async def test_rewrite_task_replies_json() -> None:
    model = FakeChatModel()
    hints = {"query": "What does she do?", "history": [human("Who is Lisa?"), ai("HR lead")]}
    response = await model.complete(req("rewrite", **hints))
    assert json.loads(response.text) == {"standalone": False, "query": "What does Lisa do?"}
    response = await model.complete(req("rewrite", query="What is the policy?", history=[]))
    assert json.loads(response.text) == {"standalone": True, "query": "What is the policy?"}


# --- fit ---


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        ("Lisa leads HR.", "lisa LEADS hr", "FIT"),  # case and punctuation ignored
        ("a b", "a b c d", "FIT"),  # exactly 0.5
        ("a b c", "a b d e", "NO_FIT"),  # 2/5
        ("The office is in Utrecht", "Parking is free", "NO_FIT"),
    ],
)
async def test_fit_uses_jaccard_threshold(old: str, new: str, verdict: str) -> None:
    response = await FakeChatModel().complete(req("fit", question="q", old_answer=old, new_answer=new))
    body = json.loads(response.text)
    assert body["verdict"] == verdict
    assert body["reason"]


def test_jaccard_edges() -> None:
    assert jaccard("", "") == 1.0
    assert jaccard("a", "") == 0.0
    assert jaccard("a b", "b c") == pytest.approx(1 / 3)


async def test_unparseable_marker_gives_prose_without_a_verdict() -> None:
    new = "whatever [[unparseable]]"
    response = await FakeChatModel().complete(req("fit", question="q", old_answer=new, new_answer=new))
    assert "fit" not in response.text.lower()
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.text)


# --- generate, echo, usage ---


async def test_generate_picks_best_matching_sentence() -> None:
    contexts = ["Parking is free. The office is in Utrecht.", "The office opens at nine."]
    response = await FakeChatModel().complete(
        req("generate", question="Where is the office located in Utrecht?", contexts=contexts)
    )
    assert response.text == "The office is in Utrecht."


async def test_generate_ties_go_to_the_first_sentence_and_no_context_means_unknown() -> None:
    model = FakeChatModel()
    tie = await model.complete(
        req("generate", question="office", contexts=["The office A.", "The office B."])
    )
    assert tie.text == "The office A."
    empty = await model.complete(req("generate", question="anything", contexts=[]))
    assert empty.text == "I don't know."


async def test_other_tasks_echo_last_user_message_and_count_words() -> None:
    request = ChatRequest(
        messages=(
            ChatMessage(role="system", content="be brief please"),
            ChatMessage(role="user", content="first"),
            ChatMessage(role="assistant", content="ok"),
            ChatMessage(role="user", content="say this back"),
        )
    )
    response = await FakeChatModel(name="fake:echo").complete(request)
    assert response.text == "say this back"
    assert response.model == "fake:echo"
    assert (response.usage.input, response.usage.output) == (3 + 1 + 1 + 3, 3)
    assert response.cost_usd == 0.0


async def test_missing_hints_are_a_non_transient_error() -> None:
    with pytest.raises(ProviderError) as info:
        await FakeChatModel().complete(req("fit", question="q"))
    assert not info.value.transient
    assert "old_answer" in str(info.value)


# --- hooks ---


async def test_fail_first_raises_transient_503s_then_answers() -> None:
    model = FakeChatModel(fail_first=2)
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            await model.complete(req(content="hi"))
        assert info.value.transient and info.value.status == 503
    assert (await model.complete(req(content="hi"))).text == "hi"
    assert model.calls == 1


async def test_hang_after_lets_exactly_n_calls_complete() -> None:
    model = FakeChatModel(latency_ms=5, hang_after=2)
    tasks = [asyncio.create_task(model.complete(req(content=f"q{i}"))) for i in range(5)]
    done, pending = await asyncio.wait(tasks, timeout=0.3)
    assert len(done) == 2
    assert len(pending) == 3
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    assert model.calls == 2


async def test_latency_is_applied() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    await FakeChatModel(latency_ms=30).complete(req())
    assert loop.time() - started >= 0.025


async def test_call_log_appends_one_line_per_completed_call(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "calls.jsonl"
    counters = FakeCounters()
    first = FakeChatModel(call_log=log, fail_first=1, counters=counters)
    second = FakeChatModel(name="fake:other", call_log=log, counters=counters)
    request = req("generate", question="q", contexts=["A."])
    with pytest.raises(ProviderError):
        await first.complete(request)  # failed calls are not logged
    await first.complete(request)
    await second.complete(req(content="x"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    expected_key = hashlib.sha256(canonical_json(request.cache_payload()).encode()).hexdigest()
    assert lines[0] == {"task": "generate", "key": expected_key, "n": 1}
    assert lines[1]["task"] == "" and lines[1]["n"] == 2
    assert len(lines) == 2
