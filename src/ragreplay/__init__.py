"""ragreplay: tell whether a new RAG configuration beats production, using the feedback you already have."""

__version__ = "0.1.0"
