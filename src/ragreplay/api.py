"""The Python API: the same jobs as the CLI, for notebooks and scripts.

>>> import ragreplay
>>> ragreplay.ingest_log("logs.jsonl", db="ragreplay.db")          # doctest: +SKIP
>>> run_id = ragreplay.run("candidate.yaml", judge="local", db="ragreplay.db")  # doctest: +SKIP
>>> print(ragreplay.render_report(run_id, db="ragreplay.db", fmt="md"))  # doctest: +SKIP

The names differ from the subpackages (``ragreplay.ingest``, ``ragreplay.replay``, ``ragreplay.report``,
``ragreplay.gate``) on purpose: importing a subpackage binds its name on the package, which would hide a function
of the same name.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragreplay.compare.stored import COMPARISON_TABLE, comparison_rows, find_comparison
from ragreplay.core.eval import EvalContext, EvalRow, MetricValue
from ragreplay.core.gate import GatePolicy
from ragreplay.evaluation.identity import RETRIEVAL_METRICS
from ragreplay.evaluation.run import lexical_scores, retrieval_scores
from ragreplay.gate.run import GateReport, gate_target_files
from ragreplay.ingest import IngestSummary, ingest_file
from ragreplay.jobs.runner import ProgressCallback
from ragreplay.metrics.llm import score_row
from ragreplay.providers.registry import ModelFactory
from ragreplay.replay import replay_run
from ragreplay.replay.replay_run import case_selection, summarize_run
from ragreplay.replay.result_table import RESULT_TABLE, find_run, result_rows
from ragreplay.report import render
from ragreplay.report.notebook import GateReportView, IngestSummaryView, RunSummaryView
from ragreplay.report.table_export import to_dataframe
from ragreplay.settings import Settings
from ragreplay.store import Store
from ragreplay.targets.loader import load_target


def ingest_log(path: str | Path, db: str = "ragreplay.db", fmt: str | None = None) -> IngestSummary:
    """Ingest a conversation log into the store at ``db``; a notebook shows the summary as a table."""
    with Store.open(db) as store:
        return IngestSummaryView.of(ingest_file(Path(path), store, fmt))


async def run_async(
    target: str | Path,
    judge: str,
    db: str = "ragreplay.db",
    rewriter: str | None = None,
    concurrency: int = 16,
    tags: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    fresh: bool = False,
    progress: ProgressCallback | None = None,
) -> str:
    """Replay the ingested cases through ``target`` (a target YAML), judged by ``judge``; return the run id."""
    base = settings or Settings()
    settings = base.model_copy(
        update={"db": db, "judge": judge, "rewriter": rewriter or base.rewriter, "concurrency": concurrency}
    )
    with Store.open(settings.db) as store:
        cases = case_selection(store, None, tags, None)
        selection = {"tags": dict(tags) if tags else None}
        run = await replay_run.replay(
            store, settings, load_target(Path(target)), cases, selection, os.environ, fresh, progress
        )
        return run.id


def run(target: str | Path, judge: str, db: str = "ragreplay.db", **kwargs: object) -> str:
    """Synchronous :func:`run_async`."""
    return asyncio.run(run_async(target, judge, db, **kwargs))  # type: ignore[arg-type]


def summary(run_id: str, db: str = "ragreplay.db") -> RunSummaryView:
    """The summary of a run (verdict counts, rates with intervals, per-tag rows, cases); a notebook shows its
    counts, verdict matrix and rates as tables."""
    with Store.open(db) as store:
        return RunSummaryView.of(summarize_run(store, run_id))


def run_dataframe(run_id: str, db: str = "ragreplay.db") -> Any:
    """A run's cases and results as a :class:`pandas.DataFrame`, one row a case, the columns of
    ``ragreplay export`` (needs ``pip install 'ragreplay[pandas]'``)."""
    with Store.open(db) as store:
        return to_dataframe(RESULT_TABLE, result_rows(store, find_run(store, run_id)))


def comparison_dataframe(comparison_id: str, db: str = "ragreplay.db") -> Any:
    """A stored comparison's rows as a :class:`pandas.DataFrame`, one row per case and challenger (needs
    ``pip install 'ragreplay[pandas]'``)."""
    with Store.open(db) as store:
        return to_dataframe(COMPARISON_TABLE, comparison_rows(store, find_comparison(store, comparison_id)))


def render_report(run_id: str, db: str = "ragreplay.db", fmt: str = "text") -> str:
    """A run's report as text, Markdown or JSON."""
    return render(summary(run_id, db), fmt)


def run_gate(
    champion: str | Path,
    challenger: str | Path,
    judge: str,
    db: str = "ragreplay.db",
    set_ref: str = "latest",
    policy: GatePolicy | None = None,
    accept_local_judge: bool = False,
    fit_judge: str | None = None,
    settings: Settings | None = None,
    fresh: bool = False,
) -> GateReport:
    """Gate ``challenger`` against ``champion`` (target YAMLs) on the regression set ``set_ref``; the report's
    ``verdict.decision`` is pass, fail, inconclusive or error and ``verdict.exit_code`` the CLI's code; a notebook
    shows the decision and its bars."""
    base = settings or Settings()
    with Store.open(db) as store:
        report = asyncio.run(
            gate_target_files(
                store=store,
                settings=base.model_copy(update={"db": db}),
                set_ref=set_ref,
                champion=Path(champion),
                challenger=Path(challenger),
                judge_spec=judge,
                fit_judge_spec=fit_judge,
                policy=policy,
                accept_local_judge=accept_local_judge,
                fresh=fresh,
            )
        )
    return GateReportView.of(report)


def retrieval_metrics(
    retrieved: Sequence[str], judgments: Mapping[str, int], metrics: Sequence[str] = RETRIEVAL_METRICS
) -> dict[str, float]:
    """The retrieval metrics of one query: ``retrieved`` is the ranking of chunk ids (best first), ``judgments``
    the graded relevance per chunk id (0: not relevant). ``metrics`` by name: ``P@k``, ``R@k``, ``Hit@k``,
    ``nDCG@k``, ``MRR`` or ``MAP`` (trec_eval's conventions, linear gain), as ``ragreplay eval`` scores them."""
    row = EvalRow(id="query", question="", answer="", retrieved=tuple(retrieved), judgments=dict(judgments))
    return {name: _known(value) for name, value in retrieval_scores(row, metrics).items()}


def lexical_metrics(answer: str, reference: str) -> dict[str, float]:
    """``bleu`` (sacrebleu's sentence BLEU / 100), ``rouge_l``, ``token_f1`` and ``exact_match`` (SQuAD v1.1's,
    0 or 1) of ``answer`` against ``reference``, all 0-1, as ``ragreplay eval`` scores them; ``ValueError`` for a
    blank reference (nothing to compare with)."""
    row = EvalRow(id="row", question="", answer=answer, reference=reference)
    scores = lexical_scores(row)
    if not scores:
        raise ValueError("lexical_metrics needs a reference that is not blank")
    return {name: _known(value) for name, value in scores.items()}


def _known(value: MetricValue) -> float:
    if value.value is None:
        raise ValueError(f"the metric could not be computed: {value.reason}")
    return value.value


async def llm_metrics_async(
    question: str,
    answer: str,
    *,
    judge: str,
    contexts: Sequence[str] = (),
    reference: str | None = None,
    settings: Settings | None = None,
) -> dict[str, MetricValue]:
    """The LLM-judged metrics of one row from one call to ``judge`` (``provider:model``; ``fake:default`` works
    offline): faithfulness, correctness, answer relevance and context relevance / precision / recall (see
    docs/eval.md). ``contexts`` are the texts the answer was given, in rank order. A metric that cannot be
    computed (no contexts, no reference, an unreadable reply) has ``value`` ``None`` and its ``reason``; a call
    that still fails after the provider's retries raises. Nothing is cached nor stored."""
    row = EvalRow(
        id="row",
        question=question,
        answer=answer,
        reference=reference,
        contexts=tuple(EvalContext(id=str(n), text=text) for n, text in enumerate(contexts, start=1)),
    )
    factory = ModelFactory((settings or Settings()).model_settings(), env=os.environ)
    try:
        return (await score_row(factory.build(judge), row)).metrics
    finally:
        await factory.aclose()


def llm_metrics(
    question: str,
    answer: str,
    *,
    judge: str,
    contexts: Sequence[str] = (),
    reference: str | None = None,
    settings: Settings | None = None,
) -> dict[str, MetricValue]:
    """Synchronous :func:`llm_metrics_async`."""
    return asyncio.run(
        llm_metrics_async(
            question, answer, judge=judge, contexts=contexts, reference=reference, settings=settings
        )
    )
