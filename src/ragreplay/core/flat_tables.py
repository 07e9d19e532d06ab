"""The shape of a flat table the features hand to the exporters (CSV, Parquet, pandas): its columns in order and
the kind of each, so every format types a column the same way whatever its first rows hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ColumnKind = Literal["int", "float", "bool", "text"]


@dataclass(frozen=True)
class TableShape:
    """``columns`` in order; ``kinds`` for the columns that are not text (missing: text)."""

    columns: tuple[str, ...]
    kinds: dict[str, ColumnKind] = field(default_factory=dict)

    def kind(self, column: str) -> ColumnKind:
        """The kind of ``column``: ``text`` unless :attr:`kinds` says otherwise."""
        return self.kinds.get(column, "text")
