"""Measure a follow-up rewriter on TREC CAsT 2019-2020 (718 turns with human standalone rewrites).

Reports, beside an identity baseline (never rewrite):
- kept: among turns whose human rewrite equals the question (no rewrite needed), the share left unchanged;
- exact: among turns that need a rewrite, the share matching the human rewrite (case and punctuation ignored);
- F1: token F1 between the rewrite and the human rewrite, over turns that need one;
- added-term recall: of the words the human rewrite adds to the question (the missing referent), the share
  the rewriter added too: the cheap proxy for "the human rewrite's meaning is kept".

    python benchmarks/rewrite_cast.py --rewriter fake:default
    python benchmarks/rewrite_cast.py --rewriter local
    python benchmarks/rewrite_cast.py --rewriter openai:gpt-4.1-mini --config ragreplay.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragreplay.core.types import Case, Feedback, Message, Role
from ragreplay.local.embeddings import get_embedder
from ragreplay.providers.registry import ModelFactory
from ragreplay.replay.replay_run import build_rewriter
from ragreplay.settings import load_settings
from ragreplay.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "rewrite-cast-2019-2020"
STOP = frozenset(
    "a an the of to in on for and or is are was were be what how why when where who which does do did can could "
    "about me tell it its their they this that".split(" ")
)


def tokens(text: str) -> list[str]:
    """Lowercase word tokens."""
    return re.findall(r"[a-z0-9]+", text.lower())


def token_f1(pred: str, gold: str) -> float:
    """SQuAD-style token F1."""
    p, g = tokens(pred), tokens(gold)
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or not common:
        return float(p == g)
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def added_terms(question: str, rewrite: str) -> set[str]:
    """Content words the rewrite has and the question lacks."""
    return {t for t in tokens(rewrite) if t not in STOP} - set(tokens(question))


@dataclass
class Scores:
    """Aggregates over the turns that have history."""

    kept: list[bool]
    exact: list[bool]
    f1: list[float]
    recall: list[float]
    cosine: list[float] = field(default_factory=list)

    def row(self, name: str) -> str:
        """A Markdown table row."""

        def mean(xs: Sequence[float]) -> str:
            return f"{sum(xs) / len(xs):.3f}" if xs else "–"

        return (
            f"| {name} | {mean(self.kept)} ({len(self.kept)}) | {mean(self.exact)} ({len(self.exact)}) | "
            f"{mean(self.f1)} | {mean(self.cosine)} | {mean(self.recall)} |"
        )


def score(
    rows: list[dict[str, object]], predictions: list[str], embed: Callable[[list[str]], Any] | None = None
) -> Scores:
    """Score ``predictions`` (one per row) against the human rewrites; with ``embed`` (texts -> unit vectors)
    also the cosine of each needed rewrite with the human one."""
    s = Scores([], [], [], [])
    pairs: list[tuple[str, str]] = []
    for row, pred in zip(rows, predictions, strict=True):
        question, gold = str(row["question"]), str(row["rewrite"])
        if not row["history"]:
            continue
        norm = " ".join(tokens(pred))
        if " ".join(tokens(gold)) == " ".join(tokens(question)):
            s.kept.append(norm == " ".join(tokens(question)))
            continue
        s.exact.append(norm == " ".join(tokens(gold)))
        s.f1.append(token_f1(pred, gold))
        pairs.append((pred, gold))
        wanted = added_terms(question, gold)
        if wanted:
            s.recall.append(len(wanted & set(tokens(pred))) / len(wanted))
    if embed is not None and pairs:
        left, right = embed([p for p, _ in pairs]), embed([g for _, g in pairs])
        s.cosine = [float(c) for c in (left * right).sum(axis=1)]
    return s


def as_case(row: dict[str, object]) -> Case:
    """A CAsT turn as a case: its history is the earlier user turns."""
    history = tuple(Message(role=Role.HUMAN, content=str(h["text"])) for h in row["history"])  # type: ignore[attr-defined]
    return Case(
        id=str(row["id"]),
        conversation_id=str(row["conv_id"]),
        turn_index=len(history),
        query=str(row["question"]),
        history=history,
        old_answer="",
        feedback=Feedback.GOOD,
    )


async def rewrite_all(
    rows: list[dict[str, object]], spec: str, config: Path | None, db: str, concurrency: int
) -> tuple[list[str], int, float]:
    """Rewrite every turn; returns (rewrites, model calls made, cost)."""
    settings = load_settings(config, os.environ, {"db": db})
    store = Store.open(settings.db)
    factory = ModelFactory(settings.model_settings(), cache=store.cache, env=os.environ)
    rewriter = build_rewriter(spec, factory)
    assert rewriter is not None, "pick a rewriter: local or provider:model"
    semaphore = asyncio.Semaphore(concurrency)
    cost = 0.0

    async def one(row: dict[str, object]) -> str:
        nonlocal cost
        async with semaphore:
            result = await rewriter.rewrite(as_case(row))
            cost += result.cost_usd
            return str(result.query)

    try:
        out = await asyncio.gather(*(one(r) for r in rows))
        return list(out), factory.cache_counts()["misses"], cost
    finally:
        await factory.aclose()
        store.close()


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rewriter", default="fake:default", help="model spec, provider:model")
    parser.add_argument("--config", type=Path, default=None, help="settings file (providers, prices)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--db", default=None, help="store for the model cache (default: a temporary file)")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    path = args.data / "cast_rewrites_2019_2020.normalized.jsonl"
    if not path.exists():
        sys.exit(f"CAsT data not found at {path}; pass --data")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()][: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "cache.db")
        predictions, calls, cost = asyncio.run(
            rewrite_all(rows, args.rewriter, args.config, db, args.concurrency)
        )
    with_history = sum(1 for r in rows if r["history"])
    print(f"{len(rows)} turns, {with_history} with history (turns without history make no model call)\n")
    print(
        "| rewriter | kept unchanged when no rewrite needed (n) | exact match when needed (n) | token F1 | "
        "cosine (USE) | added-term recall |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    embed = get_embedder("use").encode
    print(score(rows, [str(r["question"]) for r in rows], embed).row("identity (never rewrite)"))
    auto = [r for r in rows if r.get("automatic_rewrite")]
    if auto:
        print(
            score(auto, [str(r["automatic_rewrite"]) for r in auto], embed).row(
                f"CAsT 2020 organisers' automatic rewrite (2020 rows only, n={len(auto)})"
            )
        )
    print(score(rows, predictions, embed).row(f"`{args.rewriter}`"))
    print(f"\nmodel calls: {calls}, cost: ${cost:.4f}")


if __name__ == "__main__":
    main()
