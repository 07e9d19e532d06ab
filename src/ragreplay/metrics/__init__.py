"""The evaluation toolbox's metrics that need more than the core: lexical scores (BLEU, ROUGE-L, token F1,
exact match) on top of well-kept libraries. Retrieval metrics are pure and live in
:mod:`ragreplay.core.retrieval_metrics`."""
