"""The shipped demo data: the HR corpus, the conversation specs, the two configs and the generated log."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragreplay.core.types import Answer, Case, RetrievedChunk
from ragreplay.demo import build_log
from ragreplay.ingest import ingest_file
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.builtin_rag.corpus import load_corpus
from ragreplay.targets.config import read_target_file

DATA = Path(build_log.__file__).parent / "data"
CORPUS = DATA / "corpus"
PRODUCTION = DATA / "production.jsonl"
GROUND_TRUTH = DATA / "ground_truth.jsonl"
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DEPARTMENTS = {"operations", "finance", "it"}
# English HR words that show up in Dutch questions when users code-switch.
ENGLISH_WORDS = {
    "remote",
    "work",
    "days",
    "limit",
    "allowance",
    "approval",
    "on-call",
    "team",
    "lead",
    "hotel",
}


def front_matter(path: Path) -> dict[str, Any]:
    """The YAML between the leading ``---`` lines of a corpus document."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name}: no front matter"
    _, head, _ = text.split("---\n", 2)
    data = yaml.safe_load(head)
    assert isinstance(data, dict), path.name
    return data


def body(path: Path) -> str:
    """A document's text after its front matter."""
    return path.read_text(encoding="utf-8").split("---\n", 2)[2]


@pytest.fixture(scope="module")
def docs() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(CORPUS.glob("*.md")):
        meta = front_matter(path)
        assert meta["id"] not in found, f"duplicate id {meta['id']}"
        found[meta["id"]] = {**meta, "path": path}
    return found


@pytest.fixture(scope="module")
def specs() -> list[build_log.ConversationSpec]:
    return build_log.load_specs(DATA / "conversations.yaml")


def superseded_ids(docs: dict[str, dict[str, Any]]) -> set[str]:
    return {d["supersedes"] for d in docs.values() if d.get("supersedes")}


# --- corpus ------------------------------------------------------------------------------------------------


def test_corpus_size_and_both_languages(docs: dict[str, dict[str, Any]]) -> None:
    assert 30 <= len(docs) <= 45
    languages = Counter(d["language"] for d in docs.values())
    assert set(languages) == {"en", "nl"}
    assert min(languages.values()) >= 0.35 * len(docs)


def test_front_matter_has_required_fields(docs: dict[str, dict[str, Any]]) -> None:
    for doc_id, meta in docs.items():
        assert KEBAB.match(doc_id), doc_id
        assert meta["path"].stem == doc_id, f"{meta['path'].name} should be named {doc_id}.md"
        assert isinstance(meta["title"], str) and meta["title"].strip(), doc_id
        assert meta["language"] in ("en", "nl"), doc_id
        assert KEBAB.match(meta["policy"]), doc_id
        assert isinstance(meta["effective_date"], date), f"{doc_id}: effective_date is not YYYY-MM-DD"
        assert meta.get("department", "operations") in DEPARTMENTS, doc_id
        unknown = set(meta) - {
            "id",
            "title",
            "language",
            "department",
            "policy",
            "effective_date",
            "supersedes",
        }
        assert not unknown - {"path"}, f"{doc_id}: unknown fields {unknown}"


def test_documents_are_150_to_600_words(docs: dict[str, dict[str, Any]]) -> None:
    for doc_id, meta in docs.items():
        words = len(body(meta["path"]).split())
        assert 150 <= words <= 600, f"{doc_id}: {words} words"


def test_supersedes_points_to_an_earlier_version_of_the_same_policy(docs: dict[str, dict[str, Any]]) -> None:
    chains = 0
    for doc_id, meta in docs.items():
        old_id = meta.get("supersedes")
        if old_id is None:
            continue
        chains += 1
        assert old_id in docs, f"{doc_id} supersedes unknown {old_id}"
        old = docs[old_id]
        assert old["policy"] == meta["policy"], f"{doc_id} and {old_id} are different policies"
        assert old["effective_date"] < meta["effective_date"], f"{doc_id} is not newer than {old_id}"
    assert chains >= 6
    # remote work has three generations: 2022 -> 2024 -> 2026
    assert docs["remote-work-2026-en"]["supersedes"] == "remote-work-2024-en"
    assert docs["remote-work-2024-en"]["supersedes"] == "remote-work-2022-en"


def test_department_specific_policies_exist(docs: dict[str, dict[str, Any]]) -> None:
    assert {d["department"] for d in docs.values() if "department" in d} == DEPARTMENTS


def test_builtin_rag_loads_the_corpus(docs: dict[str, dict[str, Any]]) -> None:
    corpus = load_corpus(CORPUS, "test")
    assert {d.id for d in corpus.documents} == set(docs)
    remote = next(d for d in corpus.documents if d.id == "remote-work-2026-en")
    assert remote.policy == "remote-work" and remote.supersedes == ("remote-work-2024-en",)


# --- conversation specs ------------------------------------------------------------------------------------


def test_at_least_150_conversations_with_many_follow_ups(specs: list[build_log.ConversationSpec]) -> None:
    assert len(specs) >= 150
    assert len({s.id for s in specs}) == len(specs)
    assert all(1 <= len(s.turns) <= 4 for s in specs)
    follow_ups = sum(len(s.turns) > 1 for s in specs)
    assert follow_ups >= 0.4 * len(specs)


def test_tags_name_department_language_and_channel(specs: list[build_log.ConversationSpec]) -> None:
    for spec in specs:
        assert set(spec.tags) == {"department", "language", "channel"}, spec.id
        assert spec.user_id
    assert {s.tags["language"] for s in specs} == {"en", "nl"}
    assert len({s.tags["department"] for s in specs}) >= 5


def test_expected_docs_exist_and_are_current(
    specs: list[build_log.ConversationSpec], docs: dict[str, dict[str, Any]]
) -> None:
    old = superseded_ids(docs)
    for spec in specs:
        for turn in spec.turns:
            assert turn.expected_doc in docs, f"{spec.id}: unknown {turn.expected_doc}"
            assert turn.expected_doc not in old, f"{spec.id}: {turn.expected_doc} is superseded"


def test_expected_facts_are_in_the_expected_document(
    specs: list[build_log.ConversationSpec], docs: dict[str, dict[str, Any]]
) -> None:
    texts = {i: body(m["path"]).replace("**", "").casefold() for i, m in docs.items()}
    for spec in specs:
        for turn in spec.turns:
            for fact in turn.expected_facts:
                assert fact.casefold() in texts[turn.expected_doc], f"{spec.id}: {fact!r}"


def test_department_questions_are_tagged_with_that_department(
    specs: list[build_log.ConversationSpec], docs: dict[str, dict[str, Any]]
) -> None:
    tagged = 0
    for spec in specs:
        for turn in spec.turns:
            department = docs[turn.expected_doc].get("department")
            if department:
                tagged += 1
                assert spec.tags["department"] == department, f"{spec.id}: {turn.expected_doc}"
    assert tagged >= 20


def test_specs_cover_superseded_policies_typos_and_code_switching(
    specs: list[build_log.ConversationSpec], docs: dict[str, dict[str, Any]]
) -> None:
    newer = {d["id"] for d in docs.values() if d.get("supersedes")} - superseded_ids(docs)
    asked = Counter(t.expected_doc for s in specs for t in s.turns)
    assert all(asked[i] > 0 for i in newer), "every current version of a versioned policy is asked about"
    questions = [t.question.casefold() for s in specs for t in s.turns]
    for typo in ("vacaton", "ouderschapverlof", "pensoin", "overwrk"):
        assert any(typo in q for q in questions), typo
    switched = [
        t.question
        for s in specs
        if s.tags["language"] == "nl"
        for t in s.turns
        if ENGLISH_WORDS & set(re.findall(r"[\w-]+", t.question.casefold()))
    ]
    assert len(switched) >= 3


# --- configs -----------------------------------------------------------------------------------------------


def test_champion_and_challenger_configs() -> None:
    champion = read_target_file(DATA / "champion.yaml")
    challenger = read_target_file(DATA / "challenger.yaml")
    assert (champion.name, challenger.name) == ("champion", "challenger")
    ch, cl = champion.target, challenger.target
    assert isinstance(ch, BuiltinTargetConfig) and isinstance(cl, BuiltinTargetConfig)
    assert (ch.retrieval.mode, ch.retrieval.top_k, ch.chunking.size) == ("bm25", 3, 60)
    assert not ch.retrieval.recency.enabled and not ch.retrieval.filters
    assert (cl.retrieval.mode, cl.retrieval.top_k, cl.chunking.size) == ("hybrid", 4, 150)
    assert cl.retrieval.recency.enabled
    assert cl.retrieval.filters == {"department": "{tags.department}"}
    assert (DATA / ch.corpus).resolve() == CORPUS.resolve()


# --- the generator, with a stand-in for the champion --------------------------------------------------------


class ScriptedTarget:
    """Retrieves the expected document for questions without a '?' and a superseded memo otherwise."""

    name = "scripted"
    version = "1"

    def __init__(self, specs: list[build_log.ConversationSpec]) -> None:
        self.expected = {t.question: t.expected_doc for s in specs for t in s.turns}

    async def answer(self, question: str, case: Case) -> Answer:
        doc = self.expected[question] if "?" not in question else "remote-work-2022-en"
        return Answer(
            text=f"answer to {question}",
            contexts=(
                RetrievedChunk(id=f"{doc}#1", score=2.5),
                RetrievedChunk(id="bonus-2023-en#0", score=1.0),
            ),
        )

    async def aclose(self) -> None:
        return None


def test_generator_is_deterministic_and_ingests_cleanly(
    tmp_path: Path, specs: list[build_log.ConversationSpec]
) -> None:
    first = build_log.build(tmp_path / "a", target=ScriptedTarget(specs))
    second = build_log.build(tmp_path / "b", target=ScriptedTarget(specs))
    for name in ("production.jsonl", "ground_truth.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert first == second
    summary = ingest_file(tmp_path / "a" / "production.jsonl", None, dry_run=True)
    assert summary.conversations == len(specs)
    assert summary.cases_by_feedback["good"] > 0 and summary.cases_by_feedback["bad"] > 0
    assert summary.skips_by_reason["no_feedback"] > 0
    assert summary.skips_by_reason["system_or_tool_message"] > 0


def test_generator_feedback_follows_the_champion_with_noise(
    tmp_path: Path, specs: list[build_log.ConversationSpec]
) -> None:
    build_log.build(tmp_path, target=ScriptedTarget(specs))
    rows = [json.loads(line) for line in (tmp_path / "ground_truth.jsonl").read_text().splitlines()]
    assert len(rows) == sum(len(s.turns) for s in specs)
    for row in rows:
        question_has_mark = "?" in row["question"]
        assert row["champion_correct"] is (
            not question_has_mark or row["expected_doc"] == "remote-work-2022-en"
        )
        assert row["champion_top_doc"] == (
            row["expected_doc"] if not question_has_mark else "remote-work-2022-en"
        )
    missing = sum(r["feedback"] is None for r in rows) / len(rows)
    assert 0.12 <= missing <= 0.28
    labelled = [r for r in rows if r["feedback"] is not None]
    agree = sum((r["feedback"] == "good") == r["champion_correct"] for r in labelled) / len(labelled)
    assert 0.88 <= agree < 1.0, "mostly agrees with the champion's correctness, with a few flipped labels"
    assert any(r["champion_outdated"] for r in rows), "a superseded version of the expected policy is flagged"


def test_generator_log_has_edge_cases_and_autumn_timestamps(
    tmp_path: Path, specs: list[build_log.ConversationSpec]
) -> None:
    build_log.build(tmp_path, target=ScriptedTarget(specs))
    convs = [json.loads(line) for line in (tmp_path / "production.jsonl").read_text().splitlines()]
    assert any(c["messages"][0]["role"] == "system" for c in convs)
    assert any(c["messages"][0]["role"] == "ai" for c in convs), "an AI greeting before the first question"
    stamps = [m["ts"] for c in convs for m in c["messages"]]
    assert min(stamps) >= "2026-09-01" and max(stamps) < "2026-12-01"
    answers = [m for c in convs for m in c["messages"] if m["role"] == "ai" and m.get("retrieved")]
    assert all(m["retrieved"][0]["id"].count("#") == 1 and m["latency_ms"] > 0 for m in answers)


# --- the committed log -------------------------------------------------------------------------------------


@pytest.mark.skipif(not PRODUCTION.exists(), reason="production.jsonl not generated yet (run build_log)")
def test_shipped_production_log_ingests_with_good_bad_and_unlabelled_turns(
    specs: list[build_log.ConversationSpec],
) -> None:
    summary = ingest_file(PRODUCTION, None, dry_run=True)
    assert summary.conversations == len(specs)
    assert summary.cases_by_feedback.get("good", 0) > 0
    assert summary.cases_by_feedback.get("bad", 0) > 0
    assert summary.skips_by_reason.get("no_feedback", 0) > 0
    truth = [json.loads(line) for line in GROUND_TRUTH.read_text(encoding="utf-8").splitlines()]
    assert len(truth) == sum(len(s.turns) for s in specs)
    correct = sum(r["champion_correct"] for r in truth) / len(truth)
    assert 0.2 < correct < 0.9, (
        "the champion is neither hopeless nor perfect, so the demo has something to show"
    )
