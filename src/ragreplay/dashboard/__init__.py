"""The read-only shadow dashboard (``ragreplay shadow dashboard``): one page for the operations team."""

from ragreplay.dashboard.app import create_app

__all__ = ["create_app"]
