"""Helpers for the CI systems the gate runs in."""
