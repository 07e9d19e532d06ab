"""RAGAS's half of ``benchmarks/ragas_side_by_side.py``: run only by the RAGAS virtualenv, never imported.

Scores the rows of a JSON file (``user_input``, ``response``, ``reference``, ``retrieved_contexts``) with
RAGAS's ``faithfulness`` and ``answer_correctness`` at its default settings (``RunConfig()``: 16 workers,
10 retries), through the OpenAI client that ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` point at the mock:
LangChain's ``ChatOpenAI`` (gpt-4o-mini) and ``OpenAIEmbeddings`` (text-embedding-3-small, sent as text, not
token ids, so no tiktoken download), wrapped as RAGAS's legacy metrics expect. Prints one JSON line: rows,
rows with both scores, the mean scores, wall and process CPU seconds of the evaluation, RAGAS's version.

    /tmp/ragas-venv/bin/python benchmarks/ragas_run.py rows.json
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> None:
    """Evaluate the rows in ``argv[0]`` and print the JSON summary."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    warnings.filterwarnings("ignore")
    import ragas  # only in the RAGAS virtualenv
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import answer_correctness, faithfulness

    rows: list[dict[str, Any]] = json.loads(Path(argv[0]).read_text())
    dataset = EvaluationDataset.from_list(rows)
    llm = LangchainLLMWrapper(ChatOpenAI(model="gpt-4o-mini"))
    embeddings = LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(model="text-embedding-3-small", check_embedding_ctx_length=False)
    )
    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate(
        dataset,
        metrics=[faithfulness, answer_correctness],
        llm=llm,
        embeddings=embeddings,
        show_progress=False,
        raise_exceptions=False,
    )
    wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    scores: list[dict[str, Any]] = list(result.scores)

    def ok(value: Any) -> bool:
        return isinstance(value, int | float) and not math.isnan(value)

    def mean(name: str) -> float | None:
        values = [float(s[name]) for s in scores if ok(s.get(name))]
        return sum(values) / len(values) if values else None

    print(
        json.dumps(
            {
                "tool": f"RAGAS {ragas.__version__}",
                "rows": len(rows),
                "rows_scored": sum(
                    1 for s in scores if ok(s.get("faithfulness")) and ok(s.get("answer_correctness"))
                ),
                "faithfulness": mean("faithfulness"),
                "answer_correctness": mean("answer_correctness"),
                "wall_s": wall,
                "cpu_s": cpu_s,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
