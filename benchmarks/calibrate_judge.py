"""Measure any configured judge against human labels, and print a Markdown table.

Two tasks:

- ``--task pairwise``: PandaLM (human A / B / tie labels, ties included). Every pair is judged in both orders
  (:func:`ragreplay.judges.position.judge_pair`); an order-inconsistent pair counts as a tie. Reports accuracy
  and Cohen's kappa over the scored pairs, position consistency, wins by position and the favoured position
  (exact binomial test), unscorable pairs, model calls and cost.
- ``--task fit``: NQ301 (human acceptable / not for a candidate answer), or any set in its layout (``--data``).
  The local judge judges the candidate against each gold reference on its own and it fits when it fits any
  (:func:`ragreplay.judges.references.judge_references`); a model judge reads the references joined with " / "
  in one call, or one call per reference with ``--each-reference``. FIT should match "acceptable". Reports accuracy and
  kappa on the scored rows, accuracy over all rows (UNSCORABLE counted wrong), the best guess's accuracy when the
  judge gives one, unscorable cases and cost.

``--judge`` is ``local`` (the shipped local judge of the task) or any ``provider:model`` spec, built through
:class:`~ragreplay.providers.registry.ModelFactory` with the providers and prices of ``--config``. ``--db`` caches
model responses in a ragreplay store, so a re-run makes no model calls.

    python benchmarks/calibrate_judge.py --task pairwise --judge openai:gpt-4.1-mini --limit 200 --db cal.db
    python benchmarks/calibrate_judge.py --task fit --judge local
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.stats import rate
from ragreplay.core.types import Case, Feedback, Fit
from ragreplay.errors import RagreplayError
from ragreplay.judges.position import judge_pair, position_stats
from ragreplay.ports import ChatModel, PairwiseJudge
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import load_settings
from ragreplay.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DATASETS = {
    "pairwise": DATA / "pairwise-pandalm" / "pandalm_testset.normalized.jsonl",
    "fit": DATA / "answer-fit-nq301" / "nq301_human.normalized.jsonl",
}
LOCAL_SPECS = ("local", "local:fit", "local:pairwise")
T = TypeVar("T")


@dataclass
class CountingModel:
    """Wraps a chat model and counts what it was asked: calls, cache hits and cost."""

    inner: ChatModel
    calls: int = 0
    cached: int = 0
    cost_usd: float = 0.0

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return str(self.inner.name)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Forward the request and count its response."""
        response = await self.inner.complete(request)
        self.calls += 1
        self.cached += response.cached
        self.cost_usd += response.cost_usd
        return response


@dataclass
class Result:
    """What a calibration measured; ``rows`` are (metric, value) lines of the table."""

    task: str
    judge: str
    prompt_version: str
    metrics: dict[str, Any] = field(default_factory=dict)
    rows: list[tuple[str, str]] = field(default_factory=list)


def load_rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """The labelled rows of ``path`` (all, or the first ``limit``)."""
    if not path.exists():
        raise RagreplayError(f"dataset not found at {path}. Fix: pass --data PATH")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
                if limit is not None and len(rows) >= limit:
                    break
    return rows


def cohen_kappa(pred: Sequence[Any], gold: Sequence[Any]) -> float | None:
    """Cohen's kappa of two labelings over the labels present; ``None`` when undefined (no rows, or chance
    agreement of 1)."""
    n = len(gold)
    if n == 0:
        return None
    labels = set(pred) | set(gold)
    observed = sum(p == g for p, g in zip(pred, gold, strict=True)) / n
    expected = sum((list(pred).count(lab) / n) * (list(gold).count(lab) / n) for lab in labels)
    return None if expected >= 1.0 else (observed - expected) / (1.0 - expected)


async def bounded(items: Sequence[T], concurrency: int, work: Callable[[T], Awaitable[Any]]) -> list[Any]:
    """``work(item)`` for every item, at most ``concurrency`` at a time, results in input order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(item: T) -> Any:
        async with gate:
            return await work(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _agreement_rows(pred: Sequence[Any], gold: Sequence[Any], n: int) -> tuple[dict[str, Any], list[Any]]:
    correct = sum(p == g for p, g in zip(pred, gold, strict=True))
    acc = rate(correct, len(gold))
    kappa = cohen_kappa(pred, gold)
    metrics = {
        "n": n,
        "scored": len(gold),
        "unscorable": n - len(gold),
        "accuracy": acc.value,
        "kappa": kappa,
    }
    rows = [
        ("n", str(n)),
        ("scored", str(len(gold))),
        ("unscorable", str(n - len(gold))),
        ("accuracy (scored)", f"{_fmt(acc.value)} [{acc.low:.3f}, {acc.high:.3f}]"),
        ("Cohen's kappa (scored)", _fmt(kappa)),
    ]
    return metrics, rows


def build_pairwise_judge(spec: str, factory: ModelFactory) -> tuple[PairwiseJudge, CountingModel | None]:
    """The pairwise judge for ``spec`` and, for a model judge, the counter around its model."""
    if spec in LOCAL_SPECS:
        from ragreplay.judges.local_pairwise import LocalPairwiseJudge

        return LocalPairwiseJudge(), None
    from ragreplay.judges.pairwise import LLMPairwiseJudge

    counter = CountingModel(factory.build(spec))
    return LLMPairwiseJudge(counter), counter


async def calibrate_pairwise(
    rows: Sequence[dict[str, Any]], spec: str, factory: ModelFactory, conc: int
) -> Result:
    """Judge every PandaLM pair in both orders and compare with the human label."""
    from ragreplay.core.pairwise import PairwiseSide

    judge, counter = build_pairwise_judge(spec, factory)

    async def one(row: dict[str, Any]) -> Any:
        # a few PandaLM answers are JSON literals (true, numbers): judge them as the text they show
        a, b = PairwiseSide(answer=str(row["answer_a"])), PairwiseSide(answer=str(row["answer_b"]))
        return await judge_pair(judge, str(row["question"]), a, b, mode="both")

    outcomes = await bounded(rows, conc, one)
    as_label = {"x": "A", "y": "B", "tie": "tie"}
    scored = [(as_label[o.winner], r["label"]) for o, r in zip(outcomes, rows, strict=True) if o.winner]
    metrics, table = _agreement_rows([p for p, _ in scored], [g for _, g in scored], len(rows))
    stats = position_stats(outcomes)
    gold = [r["label"] for r in rows]
    metrics.update(position=stats.model_dump(), labels={k: gold.count(k) for k in ("A", "B", "tie")})
    favoured = stats.favoured or "none"
    table += [
        ("human labels A / B / tie", " / ".join(str(metrics["labels"][k]) for k in ("A", "B", "tie"))),
        ("position consistency", _fmt(stats.consistency_rate)),
        ("wins by position A / B / tie (per ordering)", f"{stats.a_wins} / {stats.b_wins} / {stats.ties}"),
        ("favoured position", f"{favoured} (p = {_fmt(stats.p_value, 4)})"),
    ]
    return _finish(Result("pairwise", judge.name, judge.prompt_version, metrics, table), counter)


async def calibrate_fit(
    rows: Sequence[dict[str, Any]], spec: str, factory: ModelFactory, conc: int, each_reference: bool = False
) -> Result:
    """Judge every candidate against its references and compare with the human label.

    The local judge, and a model judge with ``each_reference``, judge each reference on its own (fits any); a
    model judge otherwise reads the references joined with " / " in one call.
    """
    from ragreplay.core.types import Answer
    from ragreplay.judges.build import build_fit_judge
    from ragreplay.judges.references import judge_references

    counter: CountingModel | None = None
    if spec in LOCAL_SPECS:
        judge = build_fit_judge("local", factory)
    else:
        from ragreplay.judges.fit import FitJudge

        counter = CountingModel(factory.build(spec))
        judge = FitJudge(counter)

    one_by_one = counter is None or each_reference

    async def one(row: dict[str, Any]) -> tuple[Fit, Fit | None]:
        references = [str(r) for r in row["reference"]]
        if not one_by_one:
            references = [" / ".join(references)]
        case = Case(
            id=str(row["id"]),
            conversation_id=str(row.get("qid", row["id"])),
            turn_index=0,
            query=row["question"],
            history=(),
            old_answer=references[0],
            feedback=Feedback.GOOD,
        )
        judgment = await judge_references(
            judge, case, row["question"], Answer(text=row["candidate"]), references
        )
        return judgment.fit, judgment.best_guess

    judged = await bounded(rows, conc, one)
    labels = [bool(r["label"]) for r in rows]
    scored = [(f == Fit.FIT, g) for (f, _), g in zip(judged, labels, strict=True) if f != Fit.UNSCORABLE]
    metrics, table = _agreement_rows([p for p, _ in scored], [g for _, g in scored], len(rows))
    accepted = sum(labels)
    right = sum(p == g for p, g in scored)
    metrics["accuracy_all_rows"] = right / len(rows) if rows else None
    table.append(("accuracy (all rows, unscorable counted wrong)", _fmt(metrics["accuracy_all_rows"])))
    guesses = [(guess or fit) == Fit.FIT for fit, guess in judged]
    if all(guess is not None for _, guess in judged):
        metrics["best_guess_accuracy"] = sum(p == g for p, g in zip(guesses, labels, strict=True)) / max(
            len(rows), 1
        )
        table.append(("best guess accuracy (all rows)", _fmt(metrics["best_guess_accuracy"])))
    metrics["labels"] = {"acceptable": accepted, "not": len(rows) - accepted}
    table.insert(1, ("human labels acceptable / not", f"{accepted} / {len(rows) - accepted}"))
    return _finish(Result("fit", judge.name, judge.prompt_version, metrics, table), counter)


def _finish(result: Result, counter: CountingModel | None) -> Result:
    calls = counter.calls - counter.cached if counter else 0
    cached = counter.cached if counter else 0
    cost = counter.cost_usd if counter else 0.0
    result.metrics.update(model_calls=calls, cached=cached, cost_usd=cost)
    result.rows += [
        ("model calls", str(calls)),
        ("cached responses", str(cached)),
        ("cost (USD)", f"{cost:.4f}"),
    ]
    return result


def render(result: Result, seconds: float) -> str:
    """The Markdown report: a heading naming task, judge and prompt version, then the metrics table."""
    dataset = "PandaLM" if result.task == "pairwise" else "NQ301"
    lines = [
        f"## Judge calibration: {result.task} on {dataset}",
        "",
        f"Judge `{result.judge}`, prompt `{result.prompt_version}`, {seconds:.1f} s.",
        "",
        "| metric | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in result.rows),
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--task", choices=("pairwise", "fit"), required=True)
    parser.add_argument("--judge", required=True, help="local, or a provider:model spec such as fake:default")
    parser.add_argument("--limit", type=int, default=None, help="only the first N rows")
    parser.add_argument("--config", type=Path, default=None, help="settings YAML (providers, prices)")
    parser.add_argument("--concurrency", type=int, default=None, help="rows judged at once (default: config)")
    parser.add_argument("--db", default=None, help="ragreplay store used as the model-response cache")
    parser.add_argument("--data", type=Path, default=None, help="the dataset JSONL (default: the shared one)")
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON after the table")
    parser.add_argument(
        "--each-reference",
        action="store_true",
        help="fit: a model judge judges each reference on its own (one call each) instead of the joined list",
    )
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> tuple[Result, float]:
    """Load the settings, data and judge, calibrate, and return the result and the seconds it took."""
    settings = load_settings(args.config, os.environ, {"concurrency": args.concurrency})
    rows = load_rows(args.data or DATASETS[args.task], args.limit)
    store = Store.open(args.db) if args.db else None
    cache = store.cache if store is not None else None
    factory = ModelFactory(settings.model_settings(), cache=cache, env=os.environ)
    start = time.perf_counter()
    try:
        if args.task == "pairwise":
            result = await calibrate_pairwise(rows, args.judge, factory, settings.concurrency)
        else:
            result = await calibrate_fit(rows, args.judge, factory, settings.concurrency, args.each_reference)
    finally:
        await factory.aclose()
        if store is not None:
            store.close()
    return result, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    """Run the calibration and print the table; a user error prints its message and returns 2."""
    args = parse_args(argv)
    try:
        result, seconds = asyncio.run(run(args))
    except RagreplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(result, seconds))
    if args.json:
        print(json.dumps(result.metrics, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
