"""Judge versions (name + model + sha256 of the prompt text + axes) and judge versions side by side."""

from __future__ import annotations

import hashlib

import pytest

from ragreplay.core.judge_version import judge_version, legacy_judge_version
from ragreplay.core.review import JudgeDecision, Review, ReviewItem, ReviewSide
from ragreplay.core.version_agreement import decisions_by_version, per_version, side_by_side
from ragreplay.judges import pairwise
from ragreplay.judges.local_pairwise import LocalPairwiseJudge
from ragreplay.judges.pairwise import DEFAULT_AXES, Axis, LLMPairwiseJudge
from ragreplay.judges.version import version_of
from ragreplay.providers.fake import FakeChatModel


def test_every_part_of_the_identity_makes_a_new_version() -> None:
    base = judge_version("openai:gpt-4.1-mini", "openai:gpt-4.1-mini", "prompt", ["b", "a"], "p1")
    assert base.id == judge_version("openai:gpt-4.1-mini", "openai:gpt-4.1-mini", "prompt", ["a", "b"]).id
    assert base.prompt_sha256 == hashlib.sha256(b"prompt").hexdigest() and base.axes == ("a", "b")
    others = [
        judge_version("other", "openai:gpt-4.1-mini", "prompt", ["a", "b"]),
        judge_version("openai:gpt-4.1-mini", "openai:gpt-4.1", "prompt", ["a", "b"]),
        judge_version("openai:gpt-4.1-mini", "openai:gpt-4.1-mini", "prompt.", ["a", "b"]),
        judge_version("openai:gpt-4.1-mini", "openai:gpt-4.1-mini", "prompt", ["a"]),
    ]
    assert len({base.id, *(o.id for o in others)}) == 5
    assert base.label == "openai:gpt-4.1-mini@p1" and others[0].label.startswith("other@")
    legacy = legacy_judge_version("openai:gpt-4.1-mini", "p1")
    assert legacy.id not in {base.id, *(o.id for o in others)}
    assert legacy.id == legacy_judge_version("openai:gpt-4.1-mini", "p1").id


def test_the_llm_judge_is_versioned_by_its_prompt_text_not_its_version_string() -> None:
    judge = LLMPairwiseJudge(FakeChatModel("fake:judge"))
    version = version_of(judge)
    assert version.prompt_sha256 == hashlib.sha256(judge.prompt_text.encode()).hexdigest()
    assert judge.system_prompt in judge.prompt_text and version.model == "fake:judge"
    assert version.axes == tuple(sorted(a.name for a in DEFAULT_AXES))
    assert version_of(LLMPairwiseJudge(FakeChatModel("fake:judge"))).id == version.id
    assert version_of(LLMPairwiseJudge(FakeChatModel("fake:other"))).id != version.id
    fewer = LLMPairwiseJudge(FakeChatModel("fake:judge"), DEFAULT_AXES[:2])
    assert version_of(fewer).id != version.id
    reworded = (*DEFAULT_AXES[:3], Axis(name="recency", rubric="cites the newest document"))
    assert version_of(LLMPairwiseJudge(FakeChatModel("fake:judge"), reworded)).id != version.id


def test_a_changed_template_is_a_new_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = version_of(LLMPairwiseJudge(FakeChatModel("fake:judge")))
    monkeypatch.setattr(pairwise, "PAIRWISE_USER_TEMPLATE", pairwise.PAIRWISE_USER_TEMPLATE + "\nBe brief.")
    after = version_of(LLMPairwiseJudge(FakeChatModel("fake:judge")))
    assert after.id != before.id and after.prompt_sha256 != before.prompt_sha256


def test_local_and_unversioned_judges() -> None:
    local = version_of(LocalPairwiseJudge())
    assert local.judge == "local:pairwise" and len(local.axes) == 4 and len(local.prompt_sha256) == 64

    class Bare:
        name = "scripted:model"
        prompt_version = "v9"

        async def judge(self, *args: object) -> None: ...

    bare = version_of(Bare())
    assert bare.prompt_sha256 == hashlib.sha256(b"v9").hexdigest() and bare.axes == ()


def _item(key: str, winner: str | None, version: str) -> ReviewItem:
    return ReviewItem(
        key=key,
        source="calibration",
        question="q",
        champion=ReviewSide(answer="a"),
        challenger_side=ReviewSide(answer="b"),
        judge=JudgeDecision(judge="j", prompt_version=version, winner=winner),
    )


def _review(key: str, winner: str) -> Review:
    choice = {"champion": "A", "challenger": "B", "tie": "tie"}[winner]
    return Review(reviewer="ann", item_key=key, a_side="champion", choice=choice)


def test_old_and_new_on_the_same_items() -> None:
    # Kept decisions of the old judge on five items; the new one judged four of them and could not score one.
    items = {
        "k1": _item("k1", "champion", "old"),
        "k2": _item("k2", "champion", "old"),
        "k3": _item("k3", "challenger", "old"),
        "k4": _item("k4", None, "old"),
        "k5": _item("k5", "tie", "old"),
    }
    humans = {"k1": "champion", "k2": "challenger", "k3": "challenger", "k4": "tie", "k5": "tie"}
    reviews = [_review(k, w) for k, w in humans.items()]
    new = JudgeDecision(judge="j", prompt_version="new", winner="champion", judge_version="jv_new")
    judged = [
        ("k1", new),
        ("k2", new.model_copy(update={"winner": "challenger"})),
        ("k3", new.model_copy(update={"winner": None})),
        ("k4", new.model_copy(update={"winner": "tie"})),
        ("gone", new),
    ]
    by_version = decisions_by_version(items, judged)
    old_id = items["k1"].judge.version
    assert set(by_version) == {old_id, "jv_new"} and set(by_version["jv_new"]) == {"k1", "k2", "k3", "k4"}
    cals = per_version(items, reviews, by_version)
    assert cals[old_id].overall.n == 4 and cals[old_id].overall.agreement.k == 3  # k4 unscored by old
    assert cals["jv_new"].overall.n == 3 and cals["jv_new"].overall.agreement.k == 3  # k3 unscored by new
    (side,) = side_by_side(items, reviews, by_version, "jv_new")
    # Both scored and reviewers labelled: k1 and k2 only.
    assert side.n == 2 and side.old_vs_human.agreement.k == 1 and side.new_vs_human.agreement.k == 2
    assert side.old_vs_new.agreement.k == 1 and side.old_vs_new.agreement.n == 2
    assert side.old_label == "j@old" and side.new_label == "j@new"
    assert side_by_side(items, reviews, {"jv_new": by_version["jv_new"]}, "jv_new") == []
