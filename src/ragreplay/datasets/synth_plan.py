"""What to generate: one task per question, each with the chunks it is drawn from and a *draft* written by
templates (no model): the offline fallback's item, and the fake model's deterministic reply.

Kinds and their templates (English, or Dutch for a document whose ``language`` is ``nl``):

- ``single_hop``: "What does the TITLE say about SECTION?", the section's first sentences as the reference;
- ``multi_hop``: two documents with a section of the same name (else of one ``policy`` family, else any two):
  "What do the TITLE A and the TITLE B each say about SECTION?", both texts as the reference, both chunks;
- ``unanswerable``: a document asked about a topic none of the corpus's words mention; the reference says the
  documents do not answer it, and no chunk holds it;
- ``follow_up``: a first question and its answer on one section (the history), then "And what does it say about
  SECTION B?", which needs the first to know what "it" is.

Tasks are drawn with a seeded generator: the same corpus, ``n`` and seed give the same tasks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Literal

from ragreplay.datasets.corpus_facts import CorpusFacts, Fact
from ragreplay.targets.builtin_rag.chunking import Chunk
from ragreplay.targets.builtin_rag.text import content_tokens

Kind = Literal["single_hop", "multi_hop", "unanswerable", "follow_up"]
KINDS: tuple[Kind, ...] = ("single_hop", "multi_hop", "unanswerable", "follow_up")
MIX: dict[Kind, float] = {"single_hop": 0.4, "multi_hop": 0.2, "unanswerable": 0.2, "follow_up": 0.2}
"""The share of each kind in ``n`` questions (largest remainders; a kind short of material gives its place to
single-hop questions)."""

_TEXT = {
    "en": {
        "single": "What does the {title} say about {section}?",
        "multi": "What do the {a} and the {b} each say about {section}?",
        "multi_any": "What does the {a} say about {sa}, and the {b} about {sb}?",
        "follow": "And what does it say about {section}?",
        "none": "The documents do not answer this.",
    },
    "nl": {
        "single": "Wat staat er in {title} over {section}?",
        "multi": "Wat staat er in {a} en in {b} over {section}?",
        "multi_any": "Wat staat er in {a} over {sa}, en in {b} over {sb}?",
        "follow": "En wat staat erin over {section}?",
        "none": "De documenten geven hier geen antwoord op.",
    },
}
_OFF_TOPICS = {
    "en": (
        "pets at the office",
        "a space travel allowance",
        "beekeeping lessons",
        "the company choir",
        "yacht moorings",
    ),
    "nl": (
        "huisdieren op kantoor",
        "een ruimtevaarttoelage",
        "imkerlessen",
        "het bedrijfskoor",
        "ligplaatsen voor jachten",
    ),
}


@dataclass(frozen=True)
class SynthDraft:
    """A generated item: the question, its reference answer, the ids of the chunks that hold it, and for a
    follow-up the first question and its answer."""

    question: str
    reference: str
    chunk_ids: tuple[str, ...]
    first_question: str = ""
    first_answer: str = ""

    def as_reply(self) -> dict[str, object]:
        """The draft in the reply's shape (what the fake model answers)."""
        return {
            "question": self.question,
            "reference": self.reference,
            "chunk_ids": list(self.chunk_ids),
            "first_question": self.first_question,
            "first_answer": self.first_answer,
            "reason": "template draft",
        }


@dataclass(frozen=True)
class SynthTask:
    """One question to generate: its kind, the chunks shown, what to ask about (a section, two, or a topic the
    corpus does not cover: it makes every task's request differ), the template draft and the row's tags."""

    kind: Kind
    chunks: tuple[Chunk, ...]
    focus: str
    draft: SynthDraft
    tags: tuple[str, ...] = field(default=())


def _lang(fact: Fact) -> str:
    return fact.language if fact.language in _TEXT else "en"


def _topic(section: str) -> str:
    return section[:1].lower() + section[1:] if section[1:2].islower() else section


def _single(f: Fact) -> SynthTask:
    q = _TEXT[_lang(f)]["single"].format(title=f.doc.title, section=_topic(f.section))
    return SynthTask("single_hop", (f.chunk,), f.section, SynthDraft(q, f.text, (f.chunk.id,)), _tags(f))


def _multi(a: Fact, b: Fact) -> SynthTask:
    text = _TEXT[_lang(a)]
    if a.section.lower() == b.section.lower():
        q = text["multi"].format(a=a.doc.title, b=b.doc.title, section=_topic(a.section))
    else:
        q = text["multi_any"].format(a=a.doc.title, sa=_topic(a.section), b=b.doc.title, sb=_topic(b.section))
    reference = f"{a.doc.title}: {a.text} {b.doc.title}: {b.text}"
    draft = SynthDraft(q, reference, (a.chunk.id, b.chunk.id))
    focus = a.section if a.section.lower() == b.section.lower() else f"{a.section}; {b.section}"
    return SynthTask("multi_hop", (a.chunk, b.chunk), focus, draft, (*_tags(a), f"doc={b.doc.id}"))


def _follow(a: Fact, b: Fact) -> SynthTask:
    text = _TEXT[_lang(a)]
    first = text["single"].format(title=a.doc.title, section=_topic(a.section))
    q = text["follow"].format(section=_topic(b.section))
    draft = SynthDraft(q, b.text, (b.chunk.id,), first_question=first, first_answer=a.text)
    return SynthTask("follow_up", (a.chunk, b.chunk), f"{a.section}, then {b.section}", draft, _tags(a))


def _tags(f: Fact) -> tuple[str, ...]:
    return (f"lang={_lang(f)}", f"doc={f.doc.id}")


def _unanswerable(facts: Sequence[Fact], corpus_words: set[str]) -> list[SynthTask]:
    out = []
    for f in facts:
        text = _TEXT[_lang(f)]
        for topic in _OFF_TOPICS[_lang(f)]:
            if content_tokens(topic) & corpus_words:
                continue  # the corpus mentions it: it might answer
            q = text["single"].format(title=f.doc.title, section=topic)
            draft = SynthDraft(q, text["none"], ())
            out.append(SynthTask("unanswerable", (f.chunk,), topic, draft, _tags(f)))
    return out


def _unique(tasks: list[SynthTask]) -> list[SynthTask]:
    """The first task of each question (two pairings may make the same one)."""
    first: dict[str, SynthTask] = {}
    for task in tasks:
        first.setdefault(task.draft.question, task)
    return list(first.values())


def candidates(cf: CorpusFacts) -> dict[Kind, list[SynthTask]]:
    """Every task the templates can make from the corpus, by kind (each question once)."""
    facts = list(cf.facts)
    by_doc: dict[str, list[Fact]] = {}
    for f in facts:
        by_doc.setdefault(f.doc.id, []).append(f)
    firsts = [fs[0] for fs in by_doc.values()]
    same_section = [
        (a, b)
        for a, b in combinations(facts, 2)
        if a.doc.id != b.doc.id and a.section.lower() == b.section.lower()
    ]
    same_family = [
        (a, b)
        for a, b in combinations(firsts, 2)
        if a.doc.policy is not None and a.doc.policy == b.doc.policy and _lang(a) == _lang(b)
    ]
    words = set().union(*(content_tokens(c.text) for c in cf.chunks)) if cf.chunks else set()
    return {
        "single_hop": [_single(f) for f in facts],
        "multi_hop": _unique([_multi(a, b) for a, b in same_section + same_family]),
        "unanswerable": _unanswerable(firsts, words),
        "follow_up": [_follow(a, b) for fs in by_doc.values() for a, b in pairwise(fs)],
    }


def quotas(n: int) -> dict[Kind, int]:
    """How many questions of each kind ``n`` makes (:data:`MIX`, largest remainders)."""
    exact = {k: n * MIX[k] for k in KINDS}
    out = {k: int(v) for k, v in exact.items()}
    for k in sorted(KINDS, key=lambda k: (-(exact[k] - out[k]), KINDS.index(k)))[: n - sum(out.values())]:
        out[k] += 1
    return out


def plan_tasks(cf: CorpusFacts, n: int, seed: int) -> tuple[list[SynthTask], dict[Kind, int]]:
    """``n`` tasks drawn from :func:`candidates` by :func:`quotas` (seeded), and the shortfall per kind (what
    a kind lacked, filled with single-hop questions where there were enough)."""
    rng = random.Random(seed)
    pools = candidates(cf)
    for pool in pools.values():
        rng.shuffle(pool)
    wanted = quotas(n)
    chosen: list[SynthTask] = []
    short: dict[Kind, int] = {}
    for kind in KINDS:
        take = pools[kind][: wanted[kind]]
        if len(take) < wanted[kind]:
            short[kind] = wanted[kind] - len(take)
        chosen.extend(take)
    spare = pools["single_hop"][wanted["single_hop"] :]
    chosen.extend(spare[: sum(short.values())])
    return chosen, short
