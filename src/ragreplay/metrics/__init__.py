"""The evaluation toolbox's metrics, usable one at a time from Python: lexical scores (BLEU, ROUGE-L, token F1,
exact match) on top of well-kept libraries, the LLM-judged metrics of one row (:mod:`ragreplay.metrics.llm`,
:mod:`ragreplay.metrics.rubric_judge`), and, re-exported here, the pure retrieval metrics of
:mod:`ragreplay.core.retrieval_metrics` (trec_eval's conventions).

>>> from ragreplay.metrics import ndcg_at, token_f1
>>> round(ndcg_at(["a", "b"], {"b": 1}, k=10), 3), round(token_f1("opens at nine", "the office opens at nine"), 3)
(0.631, 0.857)

``ragreplay.retrieval_metrics``, ``ragreplay.lexical_metrics`` and ``ragreplay.llm_metrics`` score one row with
every metric of a family, as ``ragreplay eval`` does.
"""

from ragreplay.core.retrieval_metrics import (
    average_precision,
    hit_at,
    metric_value,
    ndcg_at,
    precision_at,
    recall_at,
    reciprocal_rank,
)
from ragreplay.metrics.lexical import bleu, corpus_bleu, exact_match, rouge_l, token_f1

__all__ = [
    "average_precision",
    "bleu",
    "corpus_bleu",
    "exact_match",
    "hit_at",
    "metric_value",
    "ndcg_at",
    "precision_at",
    "recall_at",
    "reciprocal_rank",
    "rouge_l",
    "token_f1",
]
