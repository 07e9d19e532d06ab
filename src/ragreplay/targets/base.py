"""What every target shares: a name for reports and a version hashed from its configuration."""

from __future__ import annotations


class TargetBase:
    """Holds ``name`` and ``version``; subclasses set ``_name`` and ``_version`` and implement ``answer``."""

    _name: str
    _version: str

    @property
    def name(self) -> str:
        """A short label for reports."""
        return self._name

    @property
    def version(self) -> str:
        """A content hash of the configuration (and, where known, of the code or log behind it)."""
        return self._version
