"""The read-only shadow dashboard (``ragreplay shadow dashboard``): one page for the operations team."""

from ragreplay.web.app import create_app

__all__ = ["create_app"]
