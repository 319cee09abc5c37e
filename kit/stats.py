"""Rates with their uncertainty: one interval for every success rate and share the kit reports."""

from __future__ import annotations

import math
from typing import Any


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a success rate (sound at 0 %, 100 % and small n).

    `successes` may be fractional: the sum of `n` per-task estimates in [0, 1] (pass^k). A quantity in
    [0, 1] with mean p varies at most as much as a 0/1 one (variance p(1-p)), so the interval stays at
    least as wide as the normal interval of their mean.
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, center - half), min(1.0, center + half))


def share(hits: int, n: int, name: str = "rate") -> dict[str, Any]:
    """`{"n", name, "interval95"}` for `hits` of `n`, rounded to 4 places as the reports print them."""
    low, high = wilson_interval(hits, n)
    return {"n": n, name: round(hits / max(n, 1), 4), "interval95": [round(low, 4), round(high, 4)]}
