"""DeepEval's half of ``benchmarks/eval_side_by_side.py``: run only by the DeepEval virtualenv, never imported.

Scores the rows of a JSONL file in ``ragreplay eval``'s format (``question``, ``answer``, ``reference``,
``contexts``) as ``LLMTestCase`` (input, actual output, expected output, retrieval context) with DeepEval's
``FaithfulnessMetric`` and its documented answer-correctness recipe, a ``GEval`` named "Correctness" with the
criteria of DeepEval's G-Eval page ("Determine whether the actual output is factually correct based on the
expected output.", over input, actual output and expected output), both at their defaults (reasons included,
G-Eval's evaluation steps generated from the criteria). ``evaluate`` runs them through DeepEval's async path,
``AsyncConfig(max_concurrent=16)`` (its default is 20; 16 matches RAGAS's workers and ragreplay's calls),
errors ignored so that a failed row is counted, not fatal; DeepEval's own retries (2 attempts a call, its
default). The judge is ``OpenAIModel("gpt-4o-mini")``, its OpenAI client pointed at the mock by
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; telemetry off (``DEEPEVAL_TELEMETRY_OPT_OUT``), no cache, nothing
printed. It runs in a temporary directory, so DeepEval's ``.deepeval`` files stay out of the checkout. DeepEval's
timeouts stay at their defaults (a test case 180 s, and the whole ``gather`` of test cases about 207 s, after
which the cases not done are cancelled: rows lost on a slow or loaded machine); ``DEEPEVAL_DISABLE_TIMEOUTS=1``
in the environment turns them off.

Prints one JSON line: rows, rows with both scores, the mean scores, wall and process CPU seconds of the
evaluation, DeepEval's version and its metric errors by exception (``metric_errors``).

    /tmp/deepeval-venv/bin/python benchmarks/deepeval_run.py rows.jsonl
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

CORRECTNESS_CRITERIA = (
    "Determine whether the actual output is factually correct based on the expected output."
)


def main(argv: list[str]) -> None:
    """Evaluate the rows in ``argv[0]`` and print the JSON summary."""
    rows_file = Path(argv[0]).resolve()
    rows: list[dict[str, Any]] = [json.loads(line) for line in rows_file.read_text().splitlines() if line]
    for name, value in {
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "DEEPEVAL_DISABLE_DOTENV": "1",
        "DEEPEVAL_NO_INSPECT_PROMPT": "1",
        "DEEPEVAL_RESULTS_FOLDER": "",
    }.items():
        os.environ.setdefault(name, value)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    os.chdir(tempfile.mkdtemp(prefix="deepeval-run-"))
    import deepeval  # only in the DeepEval virtualenv
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import FaithfulnessMetric, GEval
    from deepeval.models import OpenAIModel
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    model = OpenAIModel(model="gpt-4o-mini")
    metrics = [
        FaithfulnessMetric(model=model),
        GEval(
            name="Correctness",
            criteria=CORRECTNESS_CRITERIA,
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.EXPECTED_OUTPUT,
            ],
            model=model,
        ),
    ]
    cases = [
        LLMTestCase(
            input=r["question"],
            actual_output=r["answer"],
            expected_output=r["reference"],
            retrieval_context=list(r["contexts"]),
            name=r["id"],
        )
        for r in rows
    ]
    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate(
        cases,
        metrics,
        async_config=AsyncConfig(run_async=True, max_concurrent=16),
        display_config=DisplayConfig(show_indicator=False, print_results=False, inspect_after_run=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
        error_config=ErrorConfig(ignore_errors=True),
    )
    wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu

    scores: list[dict[str, float]] = []
    errors: dict[str, int] = {}
    for test in result.test_results:
        row: dict[str, float] = {}
        if not test.metrics_data:  # its task cancelled by DeepEval's gather timeout before any metric ended
            errors["no metric data"] = errors.get("no metric data", 0) + 1
        for data in test.metrics_data or []:
            if data.error is None and data.score is not None:
                row[data.name] = float(data.score)
            else:
                raised = re.search(r"raised (\w+)", str(data.error))  # tenacity's RetryError[... raised X]
                kind = raised.group(1) if raised else str(data.error).split(":", 1)[0][:60]
                errors[kind] = errors.get(kind, 0) + 1
        scores.append(row)
    names = ("Faithfulness", "Correctness [GEval]")

    def mean(name: str) -> float | None:
        values = [s[name] for s in scores if name in s]
        return sum(values) / len(values) if values else None

    print(
        json.dumps(
            {
                "tool": f"DeepEval {deepeval.__version__}",
                "rows": len(rows),
                "rows_scored": sum(1 for s in scores if all(n in s for n in names)),
                "faithfulness": mean(names[0]),
                "answer_correctness": mean(names[1]),
                "wall_s": wall,
                "cpu_s": cpu_s,
                "metric_errors": errors,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
