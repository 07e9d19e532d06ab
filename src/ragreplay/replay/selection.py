"""The cases a run replays, read from the store lazily: a 20,000-case run never holds its cases at once."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from itertools import islice
from typing import Protocol

from ragreplay.core.types import Case


class CaseSource(Protocol):
    """The store's ``cases`` repository, as a selection reads it."""

    def iter_cases(
        self, source_ids: Sequence[str] | None = None, tags: Mapping[str, str] | None = None
    ) -> Iterator[Case]:
        """Cases in (conversation, turn) order, page by page."""
        ...

    def iter_case_ids(self, source_ids: Sequence[str] | None = None) -> Iterator[str]:
        """The ids of :meth:`iter_cases`, in the same order, without reading the cases."""
        ...


class CaseSelection(Collection[Case]):
    """Some of the store's cases: ``len`` and ``ids`` read only ids (once), iterating streams the cases."""

    def __init__(
        self,
        cases: CaseSource,
        source_ids: Sequence[str] | None = None,
        tags: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> None:
        self._cases = cases
        self._source_ids = None if source_ids is None else list(source_ids)
        self._tags = dict(tags) if tags else None
        self._limit = limit
        self._ids: list[str] | None = None

    @property
    def ids(self) -> list[str]:
        """The selected cases' ids, in replay order."""
        if self._ids is None:
            if self._tags:  # tags live in the cases' JSON: the cases must be read to filter on them
                found: Iterator[str] = (c.id for c in self)
            else:
                found = islice(self._cases.iter_case_ids(self._source_ids), self._limit)
            self._ids = list(found)
        return self._ids

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Case]:
        return islice(self._cases.iter_cases(source_ids=self._source_ids, tags=self._tags), self._limit)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, Case) and item.id in set(self.ids)


def case_ids(cases: Collection[Case]) -> list[str]:
    """The ids of ``cases`` in order, without reading a lazy selection's cases."""
    return cases.ids if isinstance(cases, CaseSelection) else [c.id for c in cases]
