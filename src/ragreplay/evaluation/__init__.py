"""`ragreplay eval`: score a dataset of answered questions with retrieval, lexical and LLM-judged metrics,
through the one job runner, saved row by row so a killed run resumes without repeating a call."""
