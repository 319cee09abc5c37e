"""Success rates of evaluations and their 95 % intervals: of one attempt per task, or of several (pass^k).

With several attempts per task, τ²-bench's reliability metric pass^k is the chance that k attempts at a
task all succeed, and pass@k the chance that at least one does. From c successes in n attempts each task
contributes the unbiased estimates C(c,k)/C(n,k) and 1 - C(n-c,k)/C(n,k) (the chance that k of its n
attempts drawn without replacement are all successes, or not all failures), averaged over tasks.
"""

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


def _check(successes: int, attempts: int, k: int) -> None:
    if not (0 <= successes <= attempts and 1 <= k <= attempts):
        raise ValueError(f"pass^k needs 0 <= successes <= attempts and 1 <= k <= attempts; got "
                         f"{successes} successes, {attempts} attempts, k={k}")  # fmt: skip


def pass_hat_k(successes: int, attempts: int, k: int) -> float:
    """pass^k of one task: the chance that k of its attempts, drawn without replacement, all succeeded."""
    _check(successes, attempts, k)
    return math.comb(successes, k) / math.comb(attempts, k)


def pass_at_k(successes: int, attempts: int, k: int) -> float:
    """pass@k of one task: the chance that k of its attempts, drawn without replacement, are not all
    failures."""
    _check(successes, attempts, k)
    return 1.0 - math.comb(attempts - successes, k) / math.comb(attempts, k)


def _estimate(values: list[float]) -> dict[str, Any]:
    low, high = wilson_interval(sum(values), len(values))
    return {
        "rate": round(sum(values) / max(len(values), 1), 4),
        "interval95": [round(low, 4), round(high, 4)],
    }


def rate(successes: list[int], attempts: int) -> dict[str, Any]:
    """The success rate of tasks that had `attempts` attempts each, `successes[i]` of them succeeding at
    task i: `n` tasks, `success_rate` (the mean over attempts) and its Wilson `interval95` over tasks.

    With more than one attempt, also `pass^k` and `pass@k` for k = 1 .. attempts, each a rate with its
    Wilson interval over tasks (`wilson_interval`, each task's estimate counted as one observation).
    pass^1 and pass@1 are the success rate.
    """
    tasks = len(successes)
    low, high = wilson_interval(sum(successes) / attempts, tasks)
    report: dict[str, Any] = {
        "n": tasks,
        "success_rate": round(sum(successes) / attempts / max(tasks, 1), 4),
        "interval95": [round(low, 4), round(high, 4)],
    }
    if attempts > 1:
        ks = range(1, attempts + 1)
        report["pass^k"] = {str(k): _estimate([pass_hat_k(c, attempts, k) for c in successes]) for k in ks}
        report["pass@k"] = {str(k): _estimate([pass_at_k(c, attempts, k) for c in successes]) for k in ks}
    return report
