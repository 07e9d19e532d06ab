"""Synthetic test generation: plan the tasks (:mod:`.synth_plan`), write each item with a model through the
provider layer (one call per task, cached in the store) or take the template draft (offline), run through
:func:`~ragreplay.jobs.runner.run_job` (progress; a killed run started again answers its done tasks from the
model cache, so no call is paid twice), merge near-duplicate questions and make golden rows.

Near-duplicates: two questions of one kind whose content words (stopwords out, accents stripped) have a Jaccard
similarity of at least :data:`NEAR_DUPLICATE` are one question: the first is kept, the others' chunk ids join it.
Follow-ups compare their first question and question together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragreplay.core.chat import ProviderError
from ragreplay.core.eval import EvalContext
from ragreplay.core.golden import GoldenRow
from ragreplay.core.ids import content_hash
from ragreplay.core.review import HistoryTurn
from ragreplay.datasets.corpus_facts import CorpusFacts, read_corpus_facts
from ragreplay.datasets.synth_plan import MIX, Kind, SynthDraft, SynthTask, plan_tasks
from ragreplay.datasets.synth_prompt import PROMPT_VERSION, UnreadableReply, build_request, read_reply
from ragreplay.errors import ConfigError
from ragreplay.jobs.runner import JobPlan, Progress, ProgressCallback, run_job
from ragreplay.jobs.writer import StoreWriter
from ragreplay.ports import ChatModel
from ragreplay.providers.registry import ModelFactory
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.builtin_rag.text import content_tokens

NEAR_DUPLICATE = 0.8
"""Content-word Jaccard at or above which two questions of one kind are merged."""
MAX_N = 5000
"""The most questions one command generates."""


def check_count(n: int) -> None:
    """Raise :class:`ConfigError` unless ``n`` questions is a count one command may generate (1 to :data:`MAX_N`)."""
    if not 1 <= n <= MAX_N:
        raise ConfigError(f"--n {n}: give a number from 1 to {MAX_N}")


@dataclass(frozen=True)
class SynthOutcome:
    """One task done: its item (``None`` when the model failed or its reply could not be read, with why)."""

    index: int
    item: SynthDraft | None
    problem: str = ""
    failed: bool = False
    cost_usd: float = 0.0
    unpriced_calls: int = 0


@dataclass
class SynthJob:
    """Writes one item per task: the model's (``model`` set) or the template draft; keeps every outcome."""

    model: ChatModel | None
    outcomes: dict[int, SynthOutcome] = field(default_factory=dict)

    async def run_one(self, pair: tuple[int, SynthTask]) -> SynthOutcome:
        """The item of one task; a failed call or an unreadable reply is an outcome with its problem."""
        index, task = pair
        if self.model is None:
            return SynthOutcome(index, task.draft)
        try:
            response = await self.model.complete(build_request(task))
        except ProviderError as exc:
            return SynthOutcome(index, None, f"model call failed: {exc}", failed=True)
        try:
            item = read_reply(response.text, task.kind, {c.id for c in task.chunks})
        except UnreadableReply as exc:
            problem = f"unreadable reply: {exc}"
            return SynthOutcome(
                index, None, problem, cost_usd=response.cost_usd, unpriced_calls=response.unpriced_calls
            )
        return SynthOutcome(index, item, cost_usd=response.cost_usd, unpriced_calls=response.unpriced_calls)

    def count(self, progress: Progress, result: SynthOutcome) -> None:
        """Keep the outcome; failed calls count as errors, unreadable replies as unscorable, and the cost."""
        self.outcomes[result.index] = result
        if result.failed:
            progress.errors += 1
        elif result.item is None:
            progress.unscorable += 1
        progress.cost_usd += result.cost_usd
        progress.unpriced_calls += result.unpriced_calls


@dataclass(frozen=True)
class SynthResult:
    """The rows made, and what happened on the way: shortfall per kind, merged duplicates, problems, and the
    model's cost (priced dollars and calls of unknown price, see ``core/costs``)."""

    rows: list[GoldenRow]
    recipe: dict[str, object]
    short: Mapping[Kind, int] = field(default_factory=dict)
    merged: int = 0
    problems: tuple[str, ...] = ()
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    @property
    def template_made(self) -> bool:
        """Whether the templates wrote the rows (no model)."""
        return self.recipe.get("generator") == "template"


def _signature(kind: Kind, item: SynthDraft) -> set[str]:
    return content_tokens(f"{item.first_question} {item.question}" if kind == "follow_up" else item.question)


def _similar(a: set[str], b: set[str]) -> bool:
    union = a | b
    return bool(union) and len(a & b) / len(union) >= NEAR_DUPLICATE


def dedupe(done: Sequence[tuple[SynthTask, SynthDraft]]) -> tuple[list[tuple[SynthTask, SynthDraft]], int]:
    """The items with near-duplicates merged into the first of them (see the module docstring), and how many
    were merged."""
    kept: list[tuple[SynthTask, SynthDraft, set[str]]] = []
    merged = 0
    for task, item in done:
        words = _signature(task.kind, item)
        twin = next(
            (i for i, (t, _, w) in enumerate(kept) if t.kind == task.kind and _similar(w, words)), None
        )
        if twin is None:
            kept.append((task, item, words))
            continue
        t, first, w = kept[twin]
        ids = tuple(dict.fromkeys((*first.chunk_ids, *item.chunk_ids)))
        kept[twin] = (
            t,
            SynthDraft(first.question, first.reference, ids, first.first_question, first.first_answer),
            w,
        )
        merged += 1
    return [(t, i) for t, i, _ in kept], merged


def to_row(task: SynthTask, item: SynthDraft, made: str) -> GoldenRow:
    """A golden row: the chunks that hold the reference as contexts, each judged relevant (2)."""
    texts = {c.id: c.text for c in task.chunks}
    contexts = tuple(EvalContext(id=cid, text=texts[cid]) for cid in item.chunk_ids if cid in texts)
    history: tuple[HistoryTurn, ...] = ()
    if item.first_question:
        history = (
            HistoryTurn(role="human", content=item.first_question),
            HistoryTurn(role="ai", content=item.first_answer),
        )
    return GoldenRow(
        id="syn_" + content_hash([task.kind, item.first_question, item.question], 12),
        question=item.question,
        reference=item.reference,
        contexts=contexts,
        judgments={cid: 2 for cid in item.chunk_ids},
        tags=("synth", f"kind={task.kind}", f"made={made}", *task.tags),
        history=history,
    )


async def generate(
    cf: CorpusFacts,
    n: int,
    seed: int,
    model: ChatModel | None,
    model_spec: str | None,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
) -> SynthResult:
    """``n`` questions from the corpus (fewer when near-duplicates merge or replies fail; see the result)."""
    tasks, short = plan_tasks(cf, n, seed)
    plan = JobPlan(todo=list(enumerate(tasks)), progress=Progress(total=len(tasks)))
    job = SynthJob(model)
    state = await run_job(job, plan, concurrency, progress)
    ordered = sorted(job.outcomes.values(), key=lambda o: o.index)
    done = [(tasks[o.index], o.item) for o in ordered if o.item is not None]
    kept, merged = dedupe(done)
    made = "template" if model is None else "model"
    recipe: dict[str, object] = {
        "source": "synth",
        "generator": made,
        "model": model_spec,
        "prompt_version": PROMPT_VERSION if model is not None else None,
        "corpus": cf.source,
        "corpus_digest": cf.corpus.digest,
        "n": n,
        "seed": seed,
        "mix": dict(MIX),
    }
    rows = [to_row(t, i, made) for t, i in kept]
    problems = tuple(
        f"task {o.index + 1} ({tasks[o.index].kind}): {o.problem}" for o in ordered if o.item is None
    )
    return SynthResult(rows, recipe, dict(short), merged, problems, state.cost_usd, state.unpriced_calls)


async def synthesize(
    store: Store,
    settings: Settings,
    corpus: Path,
    n: int,
    seed: int,
    model_spec: str | None,
    env: Mapping[str, str] | None = None,
    progress: ProgressCallback | None = None,
) -> SynthResult:
    """:func:`generate` on the corpus at ``corpus``, the model built from ``model_spec`` (``None``: templates)
    with its calls cached in the store through the one writer; closes everything it opened."""
    check_count(n)
    cf = read_corpus_facts(corpus)
    if not cf.facts:
        raise ConfigError(
            f"--corpus {corpus}: no document has a section under a heading to draw questions from. Fix: give the "
            "documents markdown headings (## Section)"
        )
    async with StoreWriter(store) as writer:
        factory = ModelFactory(
            settings.model_settings(), cache=writer, env=env if env is not None else os.environ
        )
        try:
            model = factory.build(model_spec) if model_spec else None
            return await generate(cf, n, seed, model, model_spec, settings.concurrency, progress)
        finally:
            await factory.aclose()
