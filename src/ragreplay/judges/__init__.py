"""Judges: decide whether a new answer fits the old one (and, later, which of two answers is better)."""
