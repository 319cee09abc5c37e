"""Workplace verifier throughput: outcome-reward verifications per second in one process (one core).

The mix: generated tasks of every category and tier, each verified against its correct calls and against
perturbed ones (an extra read-only call, a dropped call, an edited argument, reversed order, an appended
malformed call). Run from the repository root:

    python3 -m bench.verifier_throughput [--tasks 400] [--seed 1] [--target 200]

Exits 1 when the rate is below ``--target``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from kit.envs.workplace.reward import SHAPING_REWARDS, outcome_reward
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.tasks import generate_tasks, quotas

Calls = list[dict[str, Any]]


def _edited(calls: Calls, rng: random.Random) -> Calls:
    index = rng.randrange(len(calls))
    arguments = json.loads(calls[index]["arguments"])
    strings = [key for key, value in arguments.items() if isinstance(value, str)]
    if strings:
        key = rng.choice(strings)
        arguments[key] += " (edited)"
    edited = list(calls)
    edited[index] = {"name": calls[index]["name"], "arguments": json.dumps(arguments)}
    return edited


def predictions(truth: Calls, rng: random.Random) -> list[Calls]:
    """The correct calls and five perturbations of them."""
    lookup = {"name": "email_search_emails", "arguments": '{"query": "update"}'}
    malformed = {"name": "email_send_email", "arguments": '{"recipient": '}
    if not truth:
        return [[], [lookup], [malformed]]
    return [truth, [lookup, *truth], truth[:-1], _edited(truth, rng), truth[::-1], [*truth, malformed]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400, help="generated tasks in the mix (default 400)")
    parser.add_argument("--seed", type=int, default=1, help="task seed (default 1)")
    parser.add_argument("--target", type=float, default=200.0, help="minimum verifications/s (default 200)")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    tasks = [task for cell in generate_tasks(quotas(args.tasks), args.seed).values() for task in cell]
    cases = [
        (predicted, list(task.calls)) for task in tasks for predicted in predictions(list(task.calls), rng)
    ]
    base = WorkplaceSandbox()
    outcome_reward(*cases[0], base)  # warm the default state and caches outside the timing

    start = time.perf_counter()
    rewards = [outcome_reward(predicted, truth, base) for predicted, truth in cases]
    outcome_rate = len(cases) / (time.perf_counter() - start)

    start = time.perf_counter()
    for predicted, truth in cases:
        for shaping in SHAPING_REWARDS.values():
            shaping(predicted, truth)
    shaping_rate = len(cases) / (time.perf_counter() - start)

    print(
        f"outcome_reward: {outcome_rate:,.0f} verifications/s on one core "
        f"({len(cases)} verifications over {len(tasks)} tasks, mean reward {sum(rewards) / len(rewards):.2f})"
    )
    print(f"shaping rewards ({', '.join(SHAPING_REWARDS)}): {shaping_rate:,.0f} verifications/s")
    if outcome_rate < args.target:
        print(f"below the target of {args.target:,.0f} verifications/s")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
