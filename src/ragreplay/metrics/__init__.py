"""The evaluation toolbox's metrics, usable one at a time from Python: lexical scores (sacrebleu's BLEU,
rouge-score's ROUGE-L, SQuAD v1.1's token F1 and exact match, each that reference's figure; and the local judges'
multilingual token F1 and exact match), the LLM-judged metrics of one row (:mod:`ragreplay.metrics.llm`,
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
from ragreplay.metrics.lexical import (
    bleu,
    corpus_bleu,
    exact_match,
    exact_match_multilingual,
    rouge_l,
    token_f1,
    token_f1_multilingual,
)

__all__ = [
    "average_precision",
    "bleu",
    "corpus_bleu",
    "exact_match",
    "exact_match_multilingual",
    "hit_at",
    "metric_value",
    "ndcg_at",
    "precision_at",
    "recall_at",
    "reciprocal_rank",
    "rouge_l",
    "token_f1",
    "token_f1_multilingual",
]
