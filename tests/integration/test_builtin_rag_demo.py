"""The built-in RAG on the shipped demo corpus: every retrieval mode finds the right document for the demo's
first questions, department filters keep other departments out, and recency drops superseded versions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import make_case
from ragreplay.cli.demo_cmd import demo_data_dir
from ragreplay.targets.builtin_rag.corpus import load_corpus
from ragreplay.targets.loader import load_target

pytestmark = pytest.mark.slow
DATA = demo_data_dir()


def _first_turns() -> list[tuple[str, str, dict[str, str]]]:
    specs = yaml.safe_load((DATA / "conversations.yaml").read_text(encoding="utf-8"))["conversations"]
    return [(c["turns"][0]["question"], c["turns"][0]["expected_doc"], c["tags"]) for c in specs]


def _config(tmp_path: Path, **retrieval: Any) -> Path:
    config = yaml.safe_load((DATA / "challenger.yaml").read_text(encoding="utf-8"))
    config["target"]["corpus"] = str(DATA / "corpus")
    config["target"]["retrieval"].update(retrieval)
    name = "-".join(f"{k}{v}" for k, v in retrieval.items() if not isinstance(v, dict)) or "default"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


async def _top_docs(path: Path, questions: list[tuple[str, str, dict[str, str]]]) -> list[list[str]]:
    target = load_target(path)
    try:
        answers = [
            await target.answer(q, make_case(id="c", conversation_id="k", query=q, old_answer="", tags=tags))
            for q, _, tags in questions
        ]
    finally:
        await target.aclose()
    return [[c.id.split("#")[0] for c in a.contexts] for a in answers]


@pytest.mark.parametrize("mode,floor", [("bm25", 0.85), ("dense", 0.75), ("hybrid", 0.88)])
def test_each_mode_finds_the_expected_document(tmp_path: Path, mode: str, floor: float) -> None:
    questions = _first_turns()
    tops = asyncio.run(_top_docs(_config(tmp_path, mode=mode, top_k=3), questions))
    hits = sum(expected in docs for (_, expected, _), docs in zip(questions, tops, strict=True))
    assert hits / len(questions) >= floor, f"{mode}: {hits}/{len(questions)} in the top 3"


def test_department_filter_keeps_other_departments_out(tmp_path: Path) -> None:
    corpus = load_corpus(DATA / "corpus", "corpus")
    department = {d.id: d.metadata.get("department") for d in corpus.documents}
    questions = [
        (q, e, t) for q, e, t in _first_turns() if t.get("department") in {"it", "operations", "finance"}
    ]
    assert questions
    tops = asyncio.run(_top_docs(_config(tmp_path), questions))
    for (_, _, tags), docs in zip(questions, tops, strict=True):
        assert all(department[d] in (None, tags["department"]) for d in docs)


def test_recency_drops_superseded_versions(tmp_path: Path) -> None:
    corpus = load_corpus(DATA / "corpus", "corpus")
    superseded = {d.metadata["supersedes"] for d in corpus.documents if d.metadata.get("supersedes")}
    assert superseded
    questions = _first_turns()
    with_recency = asyncio.run(_top_docs(_config(tmp_path, recency={"enabled": True}), questions))
    assert not any(d in superseded for docs in with_recency for d in docs)
    without = asyncio.run(_top_docs(_config(tmp_path, recency={"enabled": False}), questions))
    assert any(d in superseded for docs in without for d in docs)  # the corpus does tempt a naive retriever
