"""The built-in reference RAG (``kind: builtin``): a small, offline, honest baseline to replay against.

Modules: ``config`` (settings), ``corpus`` (documents + front matter), ``text`` (tokenizer, sentences),
``chunking``, ``retrieval`` (pure ranking functions), ``index`` (the built index and its pipeline),
``answer`` (extractive answers, generation prompt) and ``target`` (the Target and its factory).
This module imports none of them, so ``targets.config`` can import the settings without a cycle.
"""
