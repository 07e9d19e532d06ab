"""Simulated reviewers for the offline demo: the demo's ground truth (which document answers each turn) stands
in for people, so the review loop and calibration can be shown without anyone reviewing.

An answer is right when its top chunk comes from the expected document. On an item the truth prefers the side
that is right when the other is not, else a tie. A simulated reviewer gives that winner, except on a seeded
share of items (:data:`SLIP_RATE`) where it slips and picks one of the other two, as people do; and it tags
what is wrong with each wrong side: the same policy in another version (``wrong-version``), a document in
another language than the question (``wrong-language``), else the expected document missing from the side's
chunks (``missing-document``). Reviewers are named ``simulated-N`` (:data:`SIMULATED_PREFIX`), so every figure
drawn from them can say they are not people.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragreplay.core.failure_tags import SIMULATED_PREFIX
from ragreplay.core.review import SIDES, Choice, HumanWinner, Review, ReviewItem
from ragreplay.targets.builtin_rag.corpus import load_corpus

SIMULATED_REVIEWERS: tuple[str, ...] = (f"{SIMULATED_PREFIX}1", f"{SIMULATED_PREFIX}2")
SLIP_RATE = 0.1
"""The share of items on which a simulated reviewer picks a winner the truth does not."""


@dataclass(frozen=True)
class Truth:
    """What the demo knows about one turn: the document that answers it, the one the champion answered from,
    and the question's language."""

    expected_doc: str
    champion_top_doc: str | None
    language: str | None


@dataclass(frozen=True)
class DocInfo:
    """A corpus document's policy and language (versions of one policy share the policy)."""

    policy: str
    language: str


def load_truth(data: Path) -> dict[tuple[str, int], Truth]:
    """The ground truth of every AI turn, by (conversation id, message index)."""
    truth = {}
    for line in (data / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        truth[(row["conversation_id"], int(row["message_index"]))] = Truth(
            expected_doc=row["expected_doc"],
            champion_top_doc=row.get("champion_top_doc"),
            language=row.get("tags", {}).get("language"),
        )
    return truth


def load_docs(data: Path) -> dict[str, DocInfo]:
    """Each corpus document's policy and language, by document id."""
    corpus = load_corpus(data / "corpus", str(data))
    return {
        d.id: DocInfo(
            policy=str(d.metadata.get("policy", d.id)), language=str(d.metadata.get("language", ""))
        )
        for d in corpus.documents
    }


def doc_of(chunk_id: str) -> str:
    """The document id of a chunk id (``doc#3`` -> ``doc``)."""
    return chunk_id.split("#", 1)[0]


def side_failures(
    top_doc: str | None, chunk_docs: Sequence[str], truth: Truth, docs: Mapping[str, DocInfo]
) -> list[str]:
    """What is wrong with a side that answered from ``top_doc`` (its chunks from ``chunk_docs``); empty when
    it answered from the expected document."""
    if top_doc == truth.expected_doc:
        return []
    got, expected = docs.get(top_doc or ""), docs.get(truth.expected_doc)
    if got is not None and expected is not None and got.policy == expected.policy:
        return ["wrong-version"] if got.language == expected.language else ["wrong-language"]
    if got is not None and truth.language and got.language != truth.language:
        return ["wrong-language"]
    return [] if truth.expected_doc in chunk_docs else ["missing-document"]


def true_winner(champion_right: bool, challenger_right: bool) -> HumanWinner:
    """The side that is right when the other is not, else a tie."""
    if champion_right == challenger_right:
        return "tie"
    return "champion" if champion_right else "challenger"


@dataclass(frozen=True)
class ItemTruth:
    """The truth about one review item: the winner and the failure tags of its wrong sides."""

    winner: HumanWinner
    failure_tags: tuple[str, ...]


def item_truth(item: ReviewItem, truth: Truth, docs: Mapping[str, DocInfo]) -> ItemTruth:
    """Judge ``item`` by the ground truth: the champion's top document from the truth (the log's chunks are
    the champion's), the challenger's from its first chunk."""
    champion_docs = [doc_of(c.id) for c in item.champion.chunks]
    challenger_docs = [doc_of(c.id) for c in item.challenger_side.chunks]
    champion_top = truth.champion_top_doc or (champion_docs[0] if champion_docs else None)
    challenger_top = challenger_docs[0] if challenger_docs else None
    tags = side_failures(champion_top, champion_docs, truth, docs)
    tags += [t for t in side_failures(challenger_top, challenger_docs, truth, docs) if t not in tags]
    return ItemTruth(
        winner=true_winner(champion_top == truth.expected_doc, challenger_top == truth.expected_doc),
        failure_tags=tuple(tags),
    )


def simulated_review(
    item: ReviewItem, known: ItemTruth, reviewer: str, seed: int, taxonomy_version: str | None = None
) -> Review:
    """``reviewer``'s review of ``item``: the side shown as A drawn, the truth's winner (or, on a slip, one of
    the other two) and its failure tags; seeded by (seed, reviewer, item), so the same in every run."""
    rng = random.Random(f"{seed}:{reviewer}:{item.key}")
    a_side = SIDES[rng.randrange(2)]
    winner = known.winner
    if rng.random() < SLIP_RATE:
        others: list[HumanWinner] = [w for w in ("champion", "challenger", "tie") if w != winner]
        winner = rng.choice(others)
    choice: Choice = "tie" if winner == "tie" else ("A" if winner == a_side else "B")
    return Review(
        reviewer=reviewer,
        item_key=item.key,
        a_side=a_side,
        choice=choice,
        failure_tags=list(known.failure_tags),
        taxonomy_version=taxonomy_version,
    )


def assignments(
    keys: Sequence[str], reviewers: Sequence[str], overlap: int, seed: int
) -> list[tuple[str, str]]:
    """``(key, reviewer)`` pairs: ``overlap`` items (drawn, seeded) go to every reviewer, the others to one
    reviewer each in turn, so the reviewers can be compared on the shared items."""
    order = list(keys)
    random.Random(seed).shuffle(order)
    shared, rest = order[:overlap], order[overlap:]
    pairs = [(key, r) for key in shared for r in reviewers]
    pairs += [(key, reviewers[i % len(reviewers)]) for i, key in enumerate(rest)]
    position = {key: i for i, key in enumerate(keys)}
    return sorted(pairs, key=lambda p: (position[p[0]], p[1]))
