"""How a cost is told when some calls had no price: the one convention of every report.

A model call whose model has no known price (``providers/pricing.lookup_price`` is ``None``) counts as an
*unpriced call*; its dollars are not known, so they are never added as $0. Every figure of dollars is kept as
the sum over the priced calls (``cost_usd``) beside the number of unpriced calls (``unpriced_calls``): JSON
carries both keys, text, Markdown and HTML say ``$0.0123 + price unknown for 3 calls`` (or ``price unknown
for 3 calls`` when nothing was priced). A truly free call (the fake model, a local server, a cache hit) is
priced at $0 and is not unpriced.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class Costed(Protocol):
    """Anything that carries a partial cost and its unpriced calls (answers, judgments, rewrites, rows)."""

    @property
    def cost_usd(self) -> float:
        """Dollars of the priced calls."""
        ...  # pragma: no cover

    @property
    def unpriced_calls(self) -> int:
        """Calls whose price is unknown (not in ``cost_usd``)."""
        ...  # pragma: no cover


def cost_text(cost_usd: float, unpriced_calls: int = 0, digits: int = 4) -> str:
    """``$0.0123``; ``$0.0123 + price unknown for 3 calls``; ``price unknown for 1 call`` when nothing was
    priced: never $0 for calls whose price is unknown."""
    if unpriced_calls <= 0:
        return f"${cost_usd:.{digits}f}"
    calls = f"{unpriced_calls} call{'' if unpriced_calls == 1 else 's'}"
    if cost_usd > 0:
        return f"${cost_usd:.{digits}f} + price unknown for {calls}"
    return f"price unknown for {calls}"


def total_cost(parts: Iterable[Costed | None]) -> tuple[float, int]:
    """The dollars and the unpriced calls of ``parts`` together (``None`` parts skipped)."""
    usd, unpriced = 0.0, 0
    for part in parts:
        if part is not None:
            usd += part.cost_usd
            unpriced += part.unpriced_calls
    return usd, unpriced
