"""Shipped sample data and the `ragreplay demo` job."""
