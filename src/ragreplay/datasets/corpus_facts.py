"""A corpus read for test generation: its chunks, and its *facts*: the first sentences of each section of each
document (the text before the first subheading is left out), with the chunk that holds them.

The corpus is a folder of .md/.txt documents or a .jsonl file (chunked with the built-in RAG's defaults), or a
``kind: builtin`` target file (its corpus, chunked as that target chunks it), so the chunk ids of the questions
are the ids that target retrieves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragreplay.errors import ConfigError
from ragreplay.targets.builtin_rag.chunking import Chunk, chunk_corpus
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig, ChunkingConfig
from ragreplay.targets.builtin_rag.corpus import Corpus, Document, load_corpus
from ragreplay.targets.builtin_rag.text import split_sentences
from ragreplay.targets.config import read_target_file

FACT_SENTENCES = 2
"""How many sentences of a section make a fact's reference at most."""
_TARGET_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Fact:
    """The opening sentences of one section of a document, all inside one chunk."""

    doc: Document
    section: str
    sentences: tuple[str, ...]
    chunk: Chunk

    @property
    def text(self) -> str:
        """The sentences as one text (the reference a question about this section gets)."""
        return " ".join(self.sentences)

    @property
    def language(self) -> str:
        """The document's ``language`` metadata (``en`` when not given)."""
        value = self.doc.metadata.get("language")
        return value if isinstance(value, str) and value else "en"


@dataclass(frozen=True)
class CorpusFacts:
    """The corpus, its chunks and its facts (in document order)."""

    corpus: Corpus
    chunks: tuple[Chunk, ...]
    facts: tuple[Fact, ...]
    source: str


def _corpus_and_chunking(path: Path) -> tuple[Corpus, ChunkingConfig]:
    if path.suffix.lower() in _TARGET_SUFFIXES:
        target = read_target_file(path).target
        if not isinstance(target, BuiltinTargetConfig):
            raise ConfigError(
                f"--corpus {path}: a target file of kind {target.kind!r} has no corpus. Fix: pass a kind: builtin "
                "target file, or the corpus folder itself"
            )
        return load_corpus(path.parent / target.corpus, str(path)), target.chunking
    return load_corpus(path, f"--corpus {path}"), ChunkingConfig()


def _section_facts(doc: Document, chunks: list[Chunk]) -> list[Fact]:
    facts: list[Fact] = []
    by_section: dict[str, list[tuple[str, int, int]]] = {}
    sentences_of_doc = split_sentences(doc.text)
    opening = next((s.text for s in sentences_of_doc if s.heading), None)  # the title heading: no section
    for s in sentences_of_doc:
        if not s.heading and s.section and s.section not in (doc.title, opening):
            by_section.setdefault(s.section, []).append((s.text, s.start, s.end))
    for section, sentences in by_section.items():
        first = sentences[:FACT_SENTENCES]
        holder = next((c for c in chunks if c.start <= first[0][1] and first[-1][2] <= c.end), None)
        if holder is None:  # the sentences straddle two chunks: keep the first sentence alone
            first = first[:1]
            holder = next((c for c in chunks if c.start <= first[0][1] and first[0][2] <= c.end), None)
        if holder is not None:
            facts.append(Fact(doc, section, tuple(t for t, _, _ in first), holder))
    return facts


def read_corpus_facts(path: Path) -> CorpusFacts:
    """The corpus at ``path`` (a folder, a .jsonl corpus or a builtin target file), chunked, with its facts;
    :class:`ConfigError` naming the file, line and fix for a bad corpus."""
    corpus, chunking = _corpus_and_chunking(path)
    chunks = chunk_corpus(corpus.documents, chunking.size, chunking.overlap)
    facts: list[Fact] = []
    for i, doc in enumerate(corpus.documents):
        facts.extend(_section_facts(doc, [c for c in chunks if c.doc_index == i]))
    return CorpusFacts(corpus, tuple(chunks), tuple(facts), str(path))
