"""Statistics that go with every reported number."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    """A proportion ``k / n`` with its Wilson score interval."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        """The point estimate, or ``None`` when there is nothing to divide by."""
        return self.k / self.n if self.n else None


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials; ``(0, 1)`` when ``n`` is 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(k: int, n: int) -> Rate:
    """A :class:`Rate` with its 95% Wilson interval."""
    low, high = wilson_interval(k, n)
    return Rate(k=k, n=n, low=low, high=high)
