"""Tokens a solver needs on a recipe's own tasks: the length of each task's solution path, demonstrated.

    python bench/solution_paths.py [--config gpu_dialogue] [--out FILE] [overrides ...]

For every task of the recipe's train and eval files, the SFT warm-up's demonstration (the clarifying
question and the user's answer on dialogue tasks, then the solution path's searches, reads and writes with
their results from a fresh sandbox) is rendered through its last call with the recipe's chat template and
tools; what follows the prompt is what an episode that solves the task without a detour samples and reads
before the state is right, all of which counts against `grpo.max_completion_length`. Prints the
distribution and the number of tasks whose shortest solution already exceeds the recipe's budget: a budget
is chosen on these files, never on a set kept for evaluation.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def percentile(values: list[int], share: float) -> int:
    return sorted(values)[min(len(values) - 1, int(share * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="gpu_dialogue")
    parser.add_argument("--out", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()

    from kit.config.tree import load_config
    from kit.envs.environment import make_environment
    from kit.models import load_tokenizer, resolve_model
    from kit.tool_parsers import load_parser
    from kit.train.sft import demonstration

    cfg = load_config(args.config, args.overrides)
    env = make_environment(cfg.env)
    tokenizer = load_tokenizer(cfg.model, resolve_model(cfg.model.name_or_path))
    call_parser = load_parser(cfg.rollout.tool_parser, cfg.rollout.tool_parser_plugin, tokenizer)
    budget = cfg.grpo.max_completion_length
    result = {"config": args.config, "overrides": args.overrides, "budget": budget, "files": {}}
    for name in ("train_file", "eval_file"):
        lengths = []
        for task in env.load_tasks(getattr(cfg.env, name)):
            render = dict(tools=task.tools or None, tokenize=True, return_dict=True)
            prompt = tokenizer.apply_chat_template(list(task.messages), add_generation_prompt=True, **render)
            messages = demonstration(task, env, call_parser)
            start = len(task.messages)
            calls = [i for i, m in enumerate(messages) if m["role"] == "assistant" and i >= start]
            # Through the last call: its result and the closing answer are not needed for the reward.
            through = messages[: calls[-2] + 1] if len(calls) > 1 else messages
            whole = tokenizer.apply_chat_template(through, **render)
            lengths.append(len(whole["input_ids"]) - len(prompt["input_ids"]))
        figures = {
            "tasks": len(lengths), "median": statistics.median(lengths), "p90": percentile(lengths, 0.9),
            "p95": percentile(lengths, 0.95), "p99": percentile(lengths, 0.99), "max": max(lengths),
            "over_budget": sum(n > budget for n in lengths),
        }  # fmt: skip
        result["files"][getattr(cfg.env, name)] = figures
        print(f"{getattr(cfg.env, name)}: {figures['tasks']} tasks, solution path tokens median "
              f"{figures['median']:.0f}, p90 {figures['p90']}, p95 {figures['p95']}, p99 {figures['p99']}, "
              f"max {figures['max']}; {figures['over_budget']} over the budget of {budget}")  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
