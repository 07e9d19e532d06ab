"""What identifies an eval run and what its record keeps: the hash of the rows, the judge, the prompt versions
(the rubric judge's hashes the rubric), the metrics, the repeats and the target's version; the run's options as
stored; and the order its metrics are shown in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragreplay.core.eval import EvalRow
from ragreplay.core.ids import content_hash
from ragreplay.core.rubric import METRIC_PREFIX, OVERALL, Rubric
from ragreplay.metrics.llm import LLM_METRICS, PROMPT_VERSION
from ragreplay.metrics.llm_batch import BATCH_PROMPT_VERSION
from ragreplay.metrics.rubric_judge import prompt_version as rubric_prompt_version
from ragreplay.store.evals import EvalRunRecord

RETRIEVAL_METRICS = ("P@5", "R@10", "Hit@5", "MRR", "nDCG@10", "MAP")
"""The retrieval metrics computed for a row with judgments (trec_eval conventions, linear gain)."""
LEXICAL_METRICS = ("bleu", "rouge_l", "token_f1", "exact_match")
"""Computed for a row with a reference; ``bleu`` is sacrebleu's sentence BLEU divided by 100 (0-1)."""
LEXICAL_VERSION = 2
"""The lexical metrics' definitions, part of a run's identity so that a resumed run never mixes two: 2 since
``token_f1`` and ``exact_match`` are the official SQuAD v1.1 script's (1: the local judges' multilingual
normalisation, now ``ragreplay.metrics.token_f1_multilingual``)."""


def row_identity(row: EvalRow) -> dict[str, Any]:
    """What of a row identifies a run: its content (``history`` only when it has one, so rows without keep the
    identity they had)."""
    data = row.model_dump(mode="json")
    if not data["history"]:
        del data["history"]
    return data


def config_hash(
    rows: Sequence[EvalRow],
    judge_spec: str | None,
    rubric: Rubric | None = None,
    repeats: int = 1,
    target_version: str | None = None,
    rows_per_call: int = 1,
) -> str:
    """The identity of a run: the rows' content, the judge, its prompt versions (the rubric's included), the
    metrics and the lexical ones' :data:`LEXICAL_VERSION`, the repeats, the target's version and the rows per
    claims call (the last four only when asked for, so a plain run keeps the identity it had)."""
    identity: dict[str, object] = {
        "rows": content_hash([row_identity(r) for r in rows], 32),
        "judge": judge_spec,
        "prompt_version": PROMPT_VERSION if judge_spec else None,
        "retrieval": list(RETRIEVAL_METRICS),
        "lexical": list(LEXICAL_METRICS),
        "lexical_version": LEXICAL_VERSION,
    }
    if rubric is not None and judge_spec:
        identity["rubric"] = rubric_prompt_version(rubric)
    if repeats > 1 and judge_spec:
        identity["repeats"] = repeats
    if target_version is not None:
        identity["target"] = target_version
    if rows_per_call > 1 and judge_spec:
        identity["rows_per_call"] = rows_per_call
        identity["batch_prompt_version"] = BATCH_PROMPT_VERSION
    return content_hash(identity, 32)


def run_config(
    rows: int,
    rubric: Rubric | None,
    repeats: int,
    target: dict[str, str] | None = None,
    rows_per_call: int = 1,
) -> dict[str, object]:
    """What a run record keeps of its options: the metrics (and the lexical ones' version), the rubric (to show
    its criteria and weights again), the repeats, the target that answered the rows (name, version, file) and
    the rows per claims call."""
    config: dict[str, object] = {
        "retrieval": list(RETRIEVAL_METRICS),
        "lexical": list(LEXICAL_METRICS),
        "lexical_version": LEXICAL_VERSION,
        "rows": rows,
    }
    if rubric is not None:
        config["rubric"] = {
            **rubric.model_dump(mode="json"),
            "version": rubric.version,
            "prompt_version": rubric_prompt_version(rubric),
        }
    if repeats > 1:
        config["repeats"] = repeats
    if target is not None:
        config["target"] = target
    if rows_per_call > 1:
        config["rows_per_call"] = rows_per_call
    return config


def metric_order(record: EvalRunRecord) -> tuple[str, ...]:
    """The order a run's metrics are shown in: LLM, rubric (as the rubric lists them), lexical, retrieval."""
    rubric = record.config.get("rubric")
    criteria = rubric.get("criteria", []) if isinstance(rubric, dict) else []
    names = [f"{METRIC_PREFIX}{c['name']}" for c in criteria if isinstance(c, dict) and "name" in c]
    if names:
        names.append(METRIC_PREFIX + OVERALL)
    return (*LLM_METRICS, *names, *LEXICAL_METRICS, *RETRIEVAL_METRICS)
