"""Success rate on tasks, per category and tier: with a local model, or through a served endpoint.

Local evaluation runs the same rollout as training (greedy). Served evaluation talks to
`/v1/chat/completions` with `tools=` through the official `openai` client, so the server's tool
parser (the same plugin file the trainer uses) turns the model's text into `tool_calls`.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.config import KitConfig
from kit.environment import TaskEnvironment, make_environment
from kit.generation.base import Generator, Sampling
from kit.rollout import Episode, Rollouts, Task

log = logging.getLogger(__name__)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a success rate (sound at 0 %, 100 % and small n)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, center - half), min(1.0, center + half))


def summarize(tasks: list[Task], rewards: list[float]) -> dict[str, Any]:
    """Success rate overall, per category and per tier, each with its 95 % interval. Tasks whose ground
    truth does not apply to the databases (`task.info["invalid"]`) are counted apart, not scored."""
    groups: dict[str, dict[str, list[float]]] = {"category": defaultdict(list), "tier": defaultdict(list)}
    invalid = [task for task in tasks if task.info.get("invalid")]
    scored = [(t, r) for t, r in zip(tasks, rewards, strict=True) if not t.info.get("invalid")]
    rewards = [r for _, r in scored]
    for task, reward in scored:
        for key in groups:
            groups[key][str(task.info.get(key, "unknown"))].append(reward)

    def rate(values: list[float]) -> dict[str, Any]:
        successes = sum(v >= 1.0 for v in values)
        low, high = wilson_interval(successes, len(values))
        return {
            "n": len(values),
            "success_rate": round(successes / max(len(values), 1), 4),
            "interval95": [round(low, 4), round(high, 4)],
        }

    report = {
        **rate(rewards),
        "by_category": {k: rate(v) for k, v in sorted(groups["category"].items())},
        "by_tier": {k: rate(v) for k, v in sorted(groups["tier"].items())},
        "invalid": len(invalid),
    }
    if invalid:
        report["invalid_reasons"] = sorted({task.info["invalid"] for task in invalid})[:5]
    return report


@dataclass
class Evaluation:
    """What one evaluation produced: the summary, and each task's episode and outcome reward."""

    report: dict[str, Any]
    episodes: list[Episode]
    rewards: list[float]


def evaluate_with_generator(
    cfg: KitConfig, generator: Generator, tokenizer, env: TaskEnvironment, tasks: list[Task], max_tokens: int
) -> Evaluation:
    """Greedy rollouts of `tasks` (the training rollout, temperature 0), scored once."""
    rollouts = Rollouts(cfg.rollout, tokenizer, env.new_sandbox)
    episodes = rollouts.run(tasks, generator, Sampling(temperature=0.0), max_tokens)
    rewards = [env.outcome(t, e.tool_calls) for t, e in zip(tasks, episodes, strict=True)]
    return Evaluation(summarize(tasks, rewards), episodes, rewards)


def evaluate_model(
    cfg: KitConfig, model, tokenizer, env: TaskEnvironment, tasks: list[Task], max_tokens: int | None = None
) -> Evaluation:
    """Greedy rollouts of a local transformers model, in eval mode with its KV cache on.

    Trainers (SFT, GRPO) set `config.use_cache = False` on the model they train, which makes `generate`
    recompute the whole prefix at every token; both settings are restored afterwards.
    """
    from kit.generation.transformers_gen import TransformersGenerator

    tokens = max_tokens or int(cfg.grpo.get("max_completion_length", 256))
    was_training, used_cache = model.training, model.config.use_cache
    model.eval()
    model.config.use_cache = True
    try:
        generator = TransformersGenerator.for_model(model, tokenizer)
        return evaluate_with_generator(cfg, generator, tokenizer, env, tasks, tokens)
    finally:
        model.train(was_training)
        model.config.use_cache = used_cache


def _served_episode(
    client, model: str, env: TaskEnvironment, task: Task, cfg: KitConfig, max_tokens: int
) -> float:
    sandbox = env.new_sandbox(task)
    messages: list[dict[str, Any]] = list(task.messages)
    calls: list[dict[str, Any]] = []
    for _ in range(cfg.rollout.max_turns):
        reply = (
            client.chat.completions.create(
                model=model, messages=messages, tools=task.tools, temperature=0.0, max_tokens=max_tokens
            )
            .choices[0]
            .message
        )
        if not reply.tool_calls:
            break
        messages.append(reply.model_dump(exclude_none=True))
        for tool_call in reply.tool_calls:
            observation = sandbox.call(tool_call.function.name, tool_call.function.arguments)
            try:
                arguments = json.loads(tool_call.function.arguments)
            except json.JSONDecodeError:
                arguments = tool_call.function.arguments
            calls.append({"name": tool_call.function.name, "arguments": arguments})
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": observation})
    return env.outcome(task, calls)


def evaluate_served(
    cfg: KitConfig,
    base_url: str,
    api_key: str | None,
    env: TaskEnvironment,
    tasks: list[Task],
    max_tokens: int,
) -> dict[str, Any]:
    """Evaluate through a served OpenAI-compatible endpoint (tool parsing happens server-side)."""
    from openai import OpenAI

    client = OpenAI(
        base_url=base_url.rstrip("/") + "/v1", api_key=api_key or "EMPTY", timeout=300, max_retries=1
    )
    model = client.models.list().data[0].id
    with ThreadPoolExecutor(max_workers=8) as pool:
        rewards = list(pool.map(lambda t: _served_episode(client, model, env, t, cfg, max_tokens), tasks))
    return summarize(tasks, rewards)


def evaluate_cli(cfg: KitConfig, args) -> int:
    """`kit eval`: print (and optionally write) the JSON report."""
    env = make_environment(cfg.env)
    tasks = env.load_tasks(args.tasks or cfg.env.eval_file, limit=args.limit or cfg.env.max_eval_rows)
    max_tokens = int(cfg.grpo.get("max_completion_length", 256))
    if args.server:
        report = evaluate_served(
            cfg, args.server, args.api_key or cfg.generation.api_key, env, tasks, max_tokens
        )
        report["endpoint"] = args.server
    else:
        from kit.models import load_policy, load_tokenizer, resolve_model

        model_dir = resolve_model(args.model or cfg.model.name_or_path)
        tokenizer = load_tokenizer(cfg.model, model_dir)
        model = load_policy(cfg.model, model_dir)
        report = evaluate_model(cfg, model, tokenizer, env, tasks, max_tokens).report
        report["model"] = model_dir
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    return 0
