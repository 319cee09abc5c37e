"""Does GRPO learn at all? Train on a handful of fixed tasks and watch their training reward.

    python bench/learning_signal.py [--tasks 4] [--steps 30] [--recipe cpu_demo] [overrides ...]

Overfitting is the point: with a few tasks seen every step, a working GRPO setup drives their reward
towards 1.0 (the goal: the mean of the last 5 steps >= 0.9). The tasks are ones GRPO can learn from:
the first training tasks on which the starting policy's sampled episodes (8 per task, the recipe's
temperature) mix successes and failures. A task it never solves gives all-equal rewards and no
gradient, and one it always solves has nothing to gain; either would only cap or pad the figure.
If the reward stays flat, look at what the run folder logged before tuning anything else:
`frac_reward_zero_std` (groups whose rewards are all equal teach nothing), `entropy` (a
near-deterministic policy samples the same episode eight times),
`sampling/importance_sampling_ratio/*` (generator vs trainer logprobs), `episode/*`.

The recipe's SFT warm-up runs first, on the whole training set, when it is enabled (the base model
never calls a tool); pass `--model DIR` to start from an already warmed-up model instead. The last
line prints the verdict.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

GOAL = 0.9


def learnable_tasks(job, count: int, samples: int = 8) -> list:
    """The first `count` training tasks whose `samples` sampled episodes mix successes and failures."""
    from kit.generation.base import Sampling
    from kit.rollout.loop import Rollouts
    from kit.rollout.task_selection import mixed_outcome_tasks

    chosen = mixed_outcome_tasks(
        job.train_tasks,
        Rollouts.from_config(job.cfg, job.tokenizer, job.env, job.user),
        job.probe_generator(),
        Sampling(temperature=job.cfg.grpo.temperature),
        job.cfg.grpo.max_completion_length,
        samples,
        want=count,
    )
    if not chosen.tasks:
        raise SystemExit("no training task has mixed outcomes under the starting policy: nothing to learn")
    return chosen.tasks


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", default="cpu_demo")
    parser.add_argument("--model", help="start from this (warmed-up) model folder and skip the SFT warm-up")
    parser.add_argument("--tasks", type=int, default=4, help="fixed training tasks")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", default=None, help="JSON file for the per-step figures")
    parser.add_argument("overrides", nargs="*", help="recipe overrides, e.g. grpo.learning_rate=2.0e-5")
    args = parser.parse_args()

    from kit.config.tree import load_config
    from kit.train.job import TrainingJob

    work = tempfile.mkdtemp(prefix="learning_signal_")
    overrides = [
        f"grpo.max_steps={args.steps}", "run.eval_tasks=0",
        "grpo.save_strategy='no'", f"run.output_dir={work}", *args.overrides,
    ]  # fmt: skip
    if args.model:
        overrides += [f"model.name_or_path={args.model}", "sft.enabled=false"]
    cfg = load_config(args.recipe, overrides)
    job = TrainingJob(cfg)  # with generation.start_server=true it runs kit serve for the job
    try:
        if cfg.sft.enabled:
            job.sft()  # on the whole training set
        job.train_tasks = learnable_tasks(job, args.tasks)  # GRPO sees only these
        job.grpo()
    finally:
        job.close()
    steps = job.run.training_steps()
    rewards = [round(m["reward"], 3) for m in steps]
    last = statistics.mean(rewards[-5:])
    result = {
        "versions": job.summary["versions"],
        "overrides": overrides,
        "tasks": [task.info.get("id") for task in job.train_tasks],
        "reward_per_step": rewards,
        "frac_reward_zero_std_per_step": [round(m.get("frac_reward_zero_std", 0.0), 3) for m in steps],
        "entropy_per_step": [round(m.get("entropy", 0.0), 4) for m in steps],
        "reward_first5_mean": statistics.mean(rewards[:5]),
        "reward_last5_mean": last,
        "seconds": job.summary["seconds"],
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print("reward per step:", " ".join(f"{r:.2f}" for r in rewards))
    verdict = "reached" if last >= GOAL else "NOT reached"
    print(f"training reward {result['reward_first5_mean']:.2f} -> {last:.2f} (mean of the first and last 5 "
          f"steps, {args.tasks} tasks): goal {GOAL} {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
