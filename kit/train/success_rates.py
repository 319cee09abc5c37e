"""Success rates of evaluations and their 95 % intervals: of one attempt per task, or of several (pass^k).

With several attempts per task, τ²-bench's reliability metric pass^k is the chance that k attempts at a
task all succeed, and pass@k the chance that at least one does. From c successes in n attempts each task
contributes the unbiased estimates C(c,k)/C(n,k) and 1 - C(n-c,k)/C(n,k) (the chance that k of its n
attempts drawn without replacement are all successes, or not all failures), averaged over tasks.
"""

from __future__ import annotations

import math
from typing import Any

from kit.stats import wilson_interval


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


def rate(outcomes: list[tuple[int, int]], repeats: int = 1) -> dict[str, Any]:
    """The success rate of tasks from `outcomes[i]` = (successes, attempts) at task i: `n` tasks,
    `success_rate` (the mean of the tasks' success shares) and its Wilson `interval95` over tasks. A task
    with no scored attempt (each one's simulated user broke a rule) is not counted.

    With `repeats` > 1, also `pass^k` and `pass@k` for k = 1 .. repeats, each a rate with its Wilson
    interval over the tasks with at least k scored attempts (`wilson_interval`, each task's estimate
    counted as one observation). pass^1 and pass@1 are the success rate.
    """
    scored = [(c, n) for c, n in outcomes if n]
    tasks = len(scored)
    total = sum(c / n for c, n in scored)
    low, high = wilson_interval(total, tasks)
    report: dict[str, Any] = {
        "n": tasks,
        "success_rate": round(total / max(tasks, 1), 4),
        "interval95": [round(low, 4), round(high, 4)],
    }
    if repeats > 1:
        ks = range(1, repeats + 1)
        report["pass^k"] = {str(k): _estimate([pass_hat_k(c, n, k) for c, n in scored if n >= k]) for k in ks}
        report["pass@k"] = {str(k): _estimate([pass_at_k(c, n, k) for c, n in scored if n >= k]) for k in ks}
    return report
